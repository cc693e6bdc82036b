#pragma once
// A bare HTTP/2 client over one TCP connection, for what a gRPC client library will not do: a
// client that never opens its flow-control window, that reads the server's SETTINGS, or that
// watches for the server's PINGs and GOAWAY. Headers go out as HPACK literals; nothing is
// compressed or decoded beyond frame boundaries.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace svdserve::testing {

struct Http2Frame {
  uint8_t type = 0;
  uint8_t flags = 0;
  uint32_t stream_id = 0;
  std::string payload;
};

inline constexpr uint8_t kHttp2Data = 0x0;
inline constexpr uint8_t kHttp2Headers = 0x1;
inline constexpr uint8_t kHttp2Settings = 0x4;
inline constexpr uint8_t kHttp2Ping = 0x6;
inline constexpr uint8_t kHttp2GoAway = 0x7;
inline constexpr uint8_t kHttp2Ack = 0x1;
inline constexpr uint16_t kHttp2MaxConcurrentStreams = 0x3;

class RawHttp2Connection {
 public:
  // Connects to 127.0.0.1:port and sends the preface and a SETTINGS frame with the given initial
  // stream window (0: the server may send no DATA on any stream).
  RawHttp2Connection(int port, uint32_t initial_window_bytes);
  ~RawHttp2Connection();
  RawHttp2Connection(const RawHttp2Connection&) = delete;
  RawHttp2Connection& operator=(const RawHttp2Connection&) = delete;

  // Opens stream `stream_id` (odd, increasing) with a POST of one gRPC message to `path`
  // ("/package.Service/Method"), and ends it.
  void unary_call(uint32_t stream_id, const std::string& path, const std::string& message);

  // Reads frames until one satisfies `wanted` (returned), the connection closes or `timeout`
  // passes (nullopt). Acknowledges the server's SETTINGS and PINGs on the way, as a client
  // library would; never opens a window.
  std::optional<Http2Frame> read_until(const std::function<bool(const Http2Frame&)>& wanted,
                                       std::chrono::milliseconds timeout);

  // The value of `setting` in the server's first SETTINGS frame, read when it comes.
  [[nodiscard]] std::optional<uint32_t> server_setting(uint16_t setting,
                                                       std::chrono::milliseconds timeout);

 private:
  void send_frame(uint8_t type, uint8_t flags, uint32_t stream_id, const std::string& payload);
  [[nodiscard]] bool read_exactly(char* out, std::size_t size,
                                  std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  std::optional<std::string> server_settings_;  // payload of the server's first SETTINGS
};

}  // namespace svdserve::testing
