#include "raw_http2.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

#include "server_process.hpp"

namespace svdserve::testing {
namespace {

constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr uint16_t kInitialWindowSize = 0x4;
constexpr uint8_t kEndStream = 0x1;
constexpr uint8_t kEndHeaders = 0x4;
constexpr std::size_t kFrameHeaderBytes = 9;

void put_uint(std::string& out, uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t get_uint(const char* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value = (value << 8) | static_cast<uint8_t>(in[i]);
  return value;
}

// An HPACK "literal header field without indexing, new name"; every string here is shorter than
// 127 bytes, so its length is one byte.
void put_header(std::string& out, const std::string& name, const std::string& value) {
  out.push_back('\0');
  out.push_back(static_cast<char>(name.size()));
  out += name;
  out.push_back(static_cast<char>(value.size()));
  out += value;
}

}  // namespace

RawHttp2Connection::RawHttp2Connection(int port, uint32_t initial_window_bytes) {
  fd_ = connect_loopback(port);
  if (fd_ < 0) throw std::runtime_error("cannot connect to port " + std::to_string(port));
  const std::string preface(kPreface, sizeof(kPreface) - 1);
  (void)!write(fd_, preface.data(), preface.size());
  std::string settings;
  put_uint(settings, kInitialWindowSize, 2);
  put_uint(settings, initial_window_bytes, 4);
  send_frame(kHttp2Settings, 0, 0, settings);
}

RawHttp2Connection::~RawHttp2Connection() { close(fd_); }

void RawHttp2Connection::send_frame(uint8_t type, uint8_t flags, uint32_t stream_id,
                                    const std::string& payload) {
  std::string frame;
  put_uint(frame, payload.size(), 3);
  frame.push_back(static_cast<char>(type));
  frame.push_back(static_cast<char>(flags));
  put_uint(frame, stream_id, 4);
  frame += payload;
  (void)!write(fd_, frame.data(), frame.size());
}

void RawHttp2Connection::unary_call(uint32_t stream_id, const std::string& path,
                                    const std::string& message) {
  std::string headers;
  put_header(headers, ":method", "POST");
  put_header(headers, ":scheme", "http");
  put_header(headers, ":path", path);
  put_header(headers, ":authority", "localhost");
  put_header(headers, "content-type", "application/grpc");
  put_header(headers, "te", "trailers");
  send_frame(kHttp2Headers, kEndHeaders, stream_id, headers);
  std::string data(1, '\0');  // not compressed
  put_uint(data, message.size(), 4);
  data += message;
  send_frame(kHttp2Data, kEndStream, stream_id, data);
}

bool RawHttp2Connection::read_exactly(char* out, std::size_t size,
                                      std::chrono::steady_clock::time_point deadline) {
  std::size_t got = 0;
  while (got < size) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd readable{fd_, POLLIN, 0};
    if (poll(&readable, 1, static_cast<int>(left.count())) <= 0) return false;
    const ssize_t n = read(fd_, out + got, size - got);
    if (n <= 0) return false;
    got += static_cast<std::size_t>(n);
  }
  return true;
}

std::optional<Http2Frame> RawHttp2Connection::read_until(
    const std::function<bool(const Http2Frame&)>& wanted, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    char header[kFrameHeaderBytes];
    if (!read_exactly(header, sizeof(header), deadline)) return std::nullopt;
    Http2Frame frame;
    frame.type = static_cast<uint8_t>(header[3]);
    frame.flags = static_cast<uint8_t>(header[4]);
    frame.stream_id = static_cast<uint32_t>(get_uint(header + 5, 4) & 0x7fffffff);
    frame.payload.resize(get_uint(header, 3));
    if (!read_exactly(frame.payload.data(), frame.payload.size(), deadline)) return std::nullopt;
    if (frame.type == kHttp2Settings && !(frame.flags & kHttp2Ack)) {
      if (!server_settings_) server_settings_ = frame.payload;
      send_frame(kHttp2Settings, kHttp2Ack, 0, {});
    }
    if (frame.type == kHttp2Ping && !(frame.flags & kHttp2Ack)) {
      send_frame(kHttp2Ping, kHttp2Ack, 0, frame.payload);
    }
    if (wanted(frame)) return frame;
  }
}

std::optional<uint32_t> RawHttp2Connection::server_setting(uint16_t setting,
                                                           std::chrono::milliseconds timeout) {
  if (!server_settings_) {
    (void)read_until([this](const Http2Frame&) { return server_settings_.has_value(); }, timeout);
  }
  if (!server_settings_) return std::nullopt;
  for (std::size_t at = 0; at + 6 <= server_settings_->size(); at += 6) {
    if (get_uint(server_settings_->data() + at, 2) == setting) {
      return static_cast<uint32_t>(get_uint(server_settings_->data() + at + 2, 4));
    }
  }
  return std::nullopt;
}

}  // namespace svdserve::testing
