#include "tests/test_paths.hpp"
#include "server/runtime/pipeline.hpp"

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/errors.hpp"
#include "kernels/spectrum.hpp"
#include "server/runtime/confined_folder.hpp"
#include "server/runtime/image_codec.hpp"
#include "test_factors.hpp"
#include "tests/support/hostile_images.hpp"

namespace svdserve {
namespace {

using namespace std::chrono_literals;

const std::filesystem::path kImages = svdserve::test::test_images_dir();
// How long a test waits for completions that must come; a failure, not a hang, if they do not.
constexpr auto kPatience = 30s;
constexpr auto kForever = std::chrono::hours(1);  // a batch delay that never expires in a test

// --- Completions ---------------------------------------------------------------------------------

// How a job ended: OK, or the kind of its typed error (the gRPC layer maps each kind to a code).
enum class Code {
  ok,
  invalid_argument,
  not_found,
  permission_denied,
  resource_exhausted,
  failed_precondition,
  unavailable,
  deadline_exceeded,
  cancelled,
  internal,
  unauthenticated,
  untyped,  // not a svdserve::Error
};

const char* name_of(Code code) {
  constexpr const char* kNames[] = {"ok",          "invalid_argument",  "not_found",
                                    "permission_denied", "resource_exhausted",
                                    "failed_precondition", "unavailable", "deadline_exceeded",
                                    "cancelled", "internal", "unauthenticated", "untyped"};
  return kNames[static_cast<int>(code)];
}
std::ostream& operator<<(std::ostream& out, Code code) { return out << name_of(code); }

Code code_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_argument: return Code::invalid_argument;
    case ErrorKind::not_found: return Code::not_found;
    case ErrorKind::permission_denied: return Code::permission_denied;
    case ErrorKind::resource_exhausted: return Code::resource_exhausted;
    case ErrorKind::failed_precondition: return Code::failed_precondition;
    case ErrorKind::unavailable: return Code::unavailable;
    case ErrorKind::deadline_exceeded: return Code::deadline_exceeded;
    case ErrorKind::cancelled: return Code::cancelled;
    case ErrorKind::internal: return Code::internal;
    case ErrorKind::unauthenticated: return Code::unauthenticated;
  }
  return Code::untyped;
}

// The code and message of what on_done was given.
std::pair<Code, std::string> outcome_of(std::exception_ptr error) {
  if (!error) return {Code::ok, ""};
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return {code_of(e.kind()), e.what()};
  } catch (const std::exception& e) {
    return {Code::untyped, e.what()};
  } catch (...) {
    return {Code::untyped, "?"};
  }
}

// What one job's on_done saw.
struct Outcome {
  int calls = 0;
  Code code = Code::untyped;
  std::string message;
  std::thread::id thread;
  std::string pixels;
  bool pixels_in_pool_memory = false;
  uint32_t rank = 0;
  double relative_error = 0.0;
  std::shared_ptr<const Factors> factors;
  std::vector<std::string> evicted_ids;
  uint32_t batch_size = 0;
};

// Collects on_done calls by job name and lets a test wait for them.
class Completions {
 public:
  [[nodiscard]] std::function<void(Job&, std::exception_ptr)> handler(const std::string& name) {
    return [this, name](Job& job, std::exception_ptr error) {
      auto [code, message] = outcome_of(error);
      std::lock_guard lock(mutex_);
      Outcome& outcome = outcomes_[name];
      if (++outcome.calls == 1) {
        outcome.code = code;
        outcome.message = std::move(message);
        outcome.thread = std::this_thread::get_id();
        outcome.pixels.assign(reinterpret_cast<const char*>(job.pixels.data()), job.pixels.size());
        outcome.pixels_in_pool_memory = job.pixels.in_pool_memory();
        outcome.rank = job.rank;
        outcome.relative_error = job.relative_error;
        outcome.factors = job.factors;
        outcome.evicted_ids = job.evicted_ids;
        outcome.batch_size = job.times.batch_size;
      }
      ++total_;
      changed_.notify_all();
    };
  }

  // Waits until at least `count` on_done calls happened in all.
  [[nodiscard]] bool wait_for(std::size_t count) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kPatience, [&] { return total_ >= count; });
  }

  [[nodiscard]] Outcome get(const std::string& name) const {
    std::lock_guard lock(mutex_);
    auto it = outcomes_.find(name);
    return it == outcomes_.end() ? Outcome{} : it->second;
  }
  [[nodiscard]] bool has(const std::string& name) const {
    std::lock_guard lock(mutex_);
    return outcomes_.contains(name);
  }
  [[nodiscard]] std::size_t total() const {
    std::lock_guard lock(mutex_);
    return total_;
  }
  [[nodiscard]] std::map<std::string, Outcome> all() const {
    std::lock_guard lock(mutex_);
    return outcomes_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, Outcome> outcomes_;  // guarded by mutex_
  std::size_t total_ = 0;                    // guarded by mutex_
};

// --- A fake backend that counts calls and can be held shut ------------------------------------

class FakeBackend final : public Backend {
 public:
  [[nodiscard]] std::string name() const override { return "fake"; }
  [[nodiscard]] std::string device_description() const override { return "test double"; }

  using Backend::decompose;
  [[nodiscard]] std::vector<std::shared_ptr<const Factors>> decompose(
      std::span<const DecodedImage* const> images, uint32_t max_rank,
      const StopCheck& stop) override {
    pass_gate();
    decompose_calls_ += 1;
    decompose_images_ += images.size();
    if (fail_decompose_) throw InternalError("solver failed on purpose");
    for (const DecodedImage* image : images) {
      // Like a GPU batch with one damaged JPEG: the whole call fails.
      if (image->type == SampleType::u16 && reject_u16_) {
        throw InvalidArgument("a u16 image in the batch, refused on purpose");
      }
      if (image->is_jpeg()) jpeg_images_ += 1;
    }
    // Asked once per image, as the CPU backend asks before each plane.
    std::vector<std::shared_ptr<const Factors>> factors;
    for (std::size_t i = 0; i < images.size(); ++i) {
      const ImageShape& shape = images[i]->shape;
      const uint32_t rank = std::min(max_rank, shape.full_rank());
      factors.push_back(stop && stop(i) ? nullptr
                                        : fakes::make_test_factors(shape, rank,
                                                                   factor_bytes_f32(shape, rank)));
    }
    return factors;
  }

  // What set_seconds_estimate says, for any shape; records what it was asked.
  [[nodiscard]] double decompose_seconds_estimate(const ImageShape& shape,
                                                  uint32_t rank) const override {
    std::lock_guard lock(mutex_);
    estimated_.emplace_back(shape, rank);
    return seconds_estimate_;
  }

  // Writes the rank into every byte, so a test can tell whose pixels it got.
  void reconstruct(std::span<const ReconstructItem> items) override {
    pass_gate();
    reconstruct_calls_ += 1;
    reconstruct_items_ += items.size();
    if (fail_reconstruct_) throw InternalError("reconstruct failed on purpose");
    for (const ReconstructItem& item : items) {
      std::fill(item.output.begin(), item.output.end(), static_cast<std::byte>(item.rank));
    }
  }

  // Takes every JPEG undecoded, as the GPU backend takes those nvJPEG decodes.
  [[nodiscard]] bool decodes_jpeg(const JpegHeader& /*header*/) const override {
    return takes_jpeg_;
  }

  void start_profiling() override { throw FailedPrecondition("fake backend"); }
  void stop_profiling() override { throw FailedPrecondition("fake backend"); }

  // While closed, every call waits inside the backend.
  void close_gate() {
    std::lock_guard lock(mutex_);
    gate_open_ = false;
  }
  void open_gate() {
    {
      std::lock_guard lock(mutex_);
      gate_open_ = true;
    }
    changed_.notify_all();
  }
  // Waits until `calls` calls have entered the backend (waiting at the gate or past it).
  [[nodiscard]] bool wait_until_entered(int calls) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kPatience, [&] { return entered_ >= calls; });
  }

  void set_seconds_estimate(double seconds) {
    std::lock_guard lock(mutex_);
    seconds_estimate_ = seconds;
  }
  [[nodiscard]] std::vector<std::pair<ImageShape, uint32_t>> estimated() const {
    std::lock_guard lock(mutex_);
    return estimated_;
  }
  void set_fail_decompose(bool fail) { fail_decompose_ = fail; }
  void set_fail_reconstruct(bool fail) { fail_reconstruct_ = fail; }
  void set_reject_u16(bool reject) { reject_u16_ = reject; }
  void set_takes_jpeg(bool takes) { takes_jpeg_ = takes; }
  [[nodiscard]] std::size_t jpeg_images() const { return jpeg_images_; }
  [[nodiscard]] int decompose_calls() const { return decompose_calls_; }
  [[nodiscard]] std::size_t decompose_images() const { return decompose_images_; }
  [[nodiscard]] int reconstruct_calls() const { return reconstruct_calls_; }
  [[nodiscard]] std::size_t reconstruct_items() const { return reconstruct_items_; }

 private:
  void pass_gate() {
    std::unique_lock lock(mutex_);
    ++entered_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return gate_open_; });
  }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool gate_open_ = true;  // guarded by mutex_
  int entered_ = 0;        // guarded by mutex_
  double seconds_estimate_ = 0.0;  // guarded by mutex_
  // What decompose_seconds_estimate was asked, guarded by mutex_ (that call is const).
  mutable std::vector<std::pair<ImageShape, uint32_t>> estimated_;
  std::atomic<bool> fail_decompose_{false};
  std::atomic<bool> fail_reconstruct_{false};
  std::atomic<bool> reject_u16_{false};
  std::atomic<bool> takes_jpeg_{false};
  std::atomic<std::size_t> jpeg_images_{0};
  std::atomic<int> decompose_calls_{0};
  std::atomic<std::size_t> decompose_images_{0};
  std::atomic<int> reconstruct_calls_{0};
  std::atomic<std::size_t> reconstruct_items_{0};
};

// --- Jobs ---------------------------------------------------------------------------------------

const ImageShape kSmall{16, 12, 3};

JobPtr decompose_job(ImageSource source, std::string id, uint32_t max_rank) {
  auto job = std::make_unique<Job>();
  job->kind = JobKind::decompose;
  job->source = std::move(source);
  job->image_id = std::move(id);
  job->max_rank = max_rank;
  return job;
}

// A file below its folder, opened as LoadDirectory opens a load root.
JobPtr decompose_file_job(const std::filesystem::path& path, std::string id, uint32_t max_rank) {
  auto job = std::make_unique<Job>();
  job->kind = JobKind::decompose;
  const std::string folder = std::filesystem::canonical(path.parent_path()).string();
  job->source = ImageFile{
      std::make_shared<const ConfinedFolder>(ConfinedFolder::open_absolute(folder)),
      path.filename().string()};
  job->image_id = std::move(id);
  job->max_rank = max_rank;
  return job;
}

JobPtr reconstruct_job(std::shared_ptr<const Factors> factors, RankSelection choice,
                       OutputFormat format = OutputFormat::raw_u8) {
  auto job = std::make_unique<Job>();
  job->kind = JobKind::reconstruct;
  job->factors = std::move(factors);
  job->rank_choice = choice;
  job->format = format;
  return job;
}

JobPtr compress_job(ImageSource source, RankSelection choice,
                    OutputFormat format = OutputFormat::raw_u8) {
  auto job = std::make_unique<Job>();
  job->kind = JobKind::compress;
  job->source = std::move(source);
  job->rank_choice = choice;
  job->format = format;
  return job;
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  EXPECT_TRUE(file) << "cannot read " << path;
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

std::span<const std::byte> as_span(const std::string& bytes) {
  return std::as_bytes(std::span(bytes.data(), bytes.size()));
}

// Encoded bytes a job reads as its request's image; `bytes` must outlive the job, as a request
// outlives its jobs.
ImageSource encoded(const std::string& bytes) { return EncodedImage{as_span(bytes)}; }

// A small random u8 image, never flat, as raw samples (see raw_source).
std::string random_samples(ImageShape shape, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> value(0, 255);
  std::string data(shape.values(), '\0');
  for (char& byte : data) byte = static_cast<char>(value(random));
  return data;
}

ImageSource raw_source(ImageShape shape, const std::string& samples) {
  return RawPixels{shape.width, shape.height, shape.channels, SampleType::u8, as_span(samples)};
}

PipelineOptions small_options() {
  PipelineOptions options;
  options.loader_threads = 1;
  options.worker_threads = 2;
  options.queue_capacity = 64;
  options.batcher = {.max_batch_size = 4, .max_queue_delay = 200us};
  return options;
}

// Pixels the backend writes for one item, called directly.
std::string direct_reconstruct(Backend& backend, const Factors& factors, uint32_t rank,
                               OutputPixels pixels) {
  std::string out(factors.shape().values() * bytes_per_value(pixels), '\0');
  const ReconstructItem item{&factors, rank, pixels,
                             std::as_writable_bytes(std::span(out.data(), out.size()))};
  backend.reconstruct(std::span(&item, 1));
  return out;
}

int max_u8_difference(const std::string& a, const std::string& b) {
  EXPECT_EQ(a.size(), b.size());
  int worst = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    worst = std::max(worst, std::abs(static_cast<int>(static_cast<uint8_t>(a[i])) -
                                     static_cast<int>(static_cast<uint8_t>(b[i]))));
  }
  return worst;
}

float max_f32_difference(const std::string& a, const std::string& b) {
  EXPECT_EQ(a.size(), b.size());
  const std::size_t n = std::min(a.size(), b.size()) / sizeof(float);
  std::vector<float> x(n);
  std::vector<float> y(n);
  std::memcpy(x.data(), a.data(), n * sizeof(float));
  std::memcpy(y.data(), b.data(), n * sizeof(float));
  float worst = 0;
  for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

// Root-mean-square distance between a planar float image and interleaved u8 pixels.
double rms_difference(const ImageF32& image, const std::string& interleaved) {
  const ImageShape& s = image.shape;
  double sum = 0;
  for (uint32_t c = 0; c < s.channels; ++c) {
    for (std::size_t p = 0; p < s.pixels_per_channel(); ++p) {
      const double d = image.plane(c)[p] -
                       static_cast<double>(static_cast<uint8_t>(interleaved[p * s.channels + c]));
      sum += d * d;
    }
  }
  return std::sqrt(sum / static_cast<double>(s.values()));
}

// --- Metrics ------------------------------------------------------------------------------------

// Counts what the pipeline reports.
class CountingMetrics final : public PipelineMetrics {
 public:
  void record_job(std::string_view, const StageTimes& times, double total_us) override {
    std::lock_guard lock(mutex_);
    ++jobs_;
    if (times.compute_us <= 0 || total_us < times.compute_us) ++inconsistent_;
  }
  void record_batch(std::size_t size) override {
    std::lock_guard lock(mutex_);
    ++batches_;
    batched_jobs_ += size;
  }
  [[nodiscard]] std::size_t jobs() const {
    std::lock_guard lock(mutex_);
    return jobs_;
  }
  [[nodiscard]] std::size_t batches() const {
    std::lock_guard lock(mutex_);
    return batches_;
  }
  [[nodiscard]] std::size_t batched_jobs() const {
    std::lock_guard lock(mutex_);
    return batched_jobs_;
  }
  // Jobs recorded without compute time, or with a total shorter than their compute.
  [[nodiscard]] std::size_t inconsistent() const {
    std::lock_guard lock(mutex_);
    return inconsistent_;
  }

 private:
  mutable std::mutex mutex_;
  std::size_t jobs_ = 0;          // guarded by mutex_
  std::size_t batches_ = 0;       // guarded by mutex_
  std::size_t batched_jobs_ = 0;  // guarded by mutex_
  std::size_t inconsistent_ = 0;  // guarded by mutex_
};

// --- On the real CPU backend --------------------------------------------------------------------

class CpuPipeline : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend_ = make_cpu_backend({.threads = 2});
  FactorStore store_{fakes::factors_only_limits(std::size_t{1} << 30, FullStoreAction::evict_lru, 64)};
  CountingMetrics metrics_;
  Completions completions_;
};

TEST_F(CpuPipeline, DecomposedRealImagesEndUpInTheStore) {
  constexpr uint32_t kMaxRank = 24;
  const std::vector<std::string> files = {"baboon.jpg", "home.jpg", "gradient.png"};
  std::deque<std::string> inputs;  // requests outlive their jobs
  {
    PipelineOptions options = small_options();
    options.loader_threads = 2;
    Pipeline pipeline(options, *backend_, store_, metrics_);
    for (const std::string& file : files) {
      inputs.push_back(read_bytes(kImages / file));
      JobPtr job = decompose_job(encoded(inputs.back()), file, kMaxRank);
      job->on_done = completions_.handler(file);
      pipeline.submit(std::move(job));
    }
    // The same photo again (joins baboon's batch when it can), and one read from disk.
    JobPtr again = decompose_job(encoded(inputs.front()), "baboon-again", kMaxRank);
    again->on_done = completions_.handler("baboon-again");
    pipeline.submit(std::move(again));
    JobPtr from_file = decompose_file_job(kImages / "pic1.png", "dir/pic1.png", kMaxRank);
    from_file->on_done = completions_.handler("dir/pic1.png");
    pipeline.submit(std::move(from_file));
    ASSERT_TRUE(completions_.wait_for(files.size() + 2));
  }

  std::map<std::string, std::string> id_to_file = {{"baboon-again", "baboon.jpg"},
                                                   {"dir/pic1.png", "pic1.png"}};
  for (const std::string& file : files) id_to_file[file] = file;
  for (const auto& [id, file] : id_to_file) {
    SCOPED_TRACE(id);
    const Outcome outcome = completions_.get(id);
    EXPECT_EQ(outcome.calls, 1);
    ASSERT_EQ(outcome.code, Code::ok) << outcome.message;
    const cv::Mat reference = cv::imread((kImages / file).string(), cv::IMREAD_UNCHANGED);
    const ImageShape shape{static_cast<uint32_t>(reference.cols),
                           static_cast<uint32_t>(reference.rows),
                           static_cast<uint32_t>(reference.channels())};
    const auto info = store_.info(id);
    ASSERT_TRUE(info);
    EXPECT_TRUE(info->resident);
    EXPECT_EQ(info->shape, shape);
    EXPECT_EQ(info->rank_kept, kMaxRank);
    EXPECT_EQ(info->bytes, factor_bytes_f32(shape, kMaxRank));
    EXPECT_EQ(store_.peek(id), outcome.factors) << "the job carries what the store holds";
    EXPECT_TRUE(outcome.evicted_ids.empty());
    const std::span<const float> values = outcome.factors->singular_values(0);
    EXPECT_GT(values.front(), 0.0f);
    EXPECT_TRUE(std::is_sorted(values.rbegin(), values.rend())) << "largest first";
  }
  EXPECT_EQ(store_.images_resident(), id_to_file.size());
  // The same pixels give the same spectrum.
  const auto first = completions_.get("baboon.jpg").factors->singular_values(0);
  const auto again = completions_.get("baboon-again").factors->singular_values(0);
  for (std::size_t i = 0; i < first.size(); ++i) EXPECT_NEAR(first[i], again[i], 1e-3f * first[0]);

  EXPECT_GE(metrics_.batches(), 1u);
  EXPECT_LE(metrics_.batches(), id_to_file.size());
  EXPECT_EQ(metrics_.batched_jobs(), id_to_file.size());
  EXPECT_EQ(metrics_.jobs(), id_to_file.size()) << "each job that reached the backend, once";
  EXPECT_EQ(metrics_.inconsistent(), 0u);
}

TEST_F(CpuPipeline, ReconstructMatchesTheBackendWithinOneGreyLevel) {
  const std::string bytes = read_bytes(kImages / "butterfly.jpg");
  const ImageF32 image = to_planes(decode_encoded(std::as_bytes(std::span(bytes.data(), bytes.size())), {}));
  const ImageF32* images[] = {&image};
  constexpr uint32_t kKept = 40;
  const std::shared_ptr<const Factors> factors = backend_->decompose(images, kKept).front();
  constexpr double kEnergy = 0.95;
  const uint32_t energy_rank = rank_for_energy(factors->all_singular_values(), kEnergy, factors->energy());
  ASSERT_GT(energy_rank, 0u);

  struct Ask {
    std::string name;
    RankSelection choice;
    OutputFormat format;
  };
  const std::vector<Ask> asks = {
      {"rank5-u8", {.rank = 5}, OutputFormat::raw_u8},
      {"rank40-u8", {.rank = kKept}, OutputFormat::raw_u8},
      {"rank20-png", {.rank = 20}, OutputFormat::png},
      {"rank12-f32", {.rank = 12}, OutputFormat::raw_f32},
      {"energy-u8", {.energy_fraction = kEnergy}, OutputFormat::raw_u8},
      {"rank0", {.rank = 0}, OutputFormat::raw_u8},
      {"rank41", {.rank = kKept + 1}, OutputFormat::raw_u8},
  };
  {
    PipelineOptions options = small_options();
    options.batcher.max_batch_size = 8;
    Pipeline pipeline(options, *backend_, store_, metrics_);
    for (const Ask& ask : asks) {
      JobPtr job = reconstruct_job(factors, ask.choice, ask.format);
      job->on_done = completions_.handler(ask.name);
      pipeline.submit(std::move(job));
    }
    ASSERT_TRUE(completions_.wait_for(asks.size()));
  }

  auto expect_u8_close = [&](const std::string& name, uint32_t rank) -> std::string {
    SCOPED_TRACE(name);
    const Outcome outcome = completions_.get(name);
    EXPECT_EQ(outcome.code, Code::ok) << outcome.message;
    EXPECT_EQ(outcome.rank, rank);
    EXPECT_NEAR(outcome.relative_error,
                relative_error_at_rank(factors->all_singular_values(), rank, factors->energy()), 1e-9);
    EXPECT_LE(max_u8_difference(outcome.pixels,
                                direct_reconstruct(*backend_, *factors, rank, OutputPixels::u8)),
              1);
    return outcome.pixels;
  };
  const std::string rank5 = expect_u8_close("rank5-u8", 5);
  const std::string rank40 = expect_u8_close("rank40-u8", kKept);
  (void)expect_u8_close("energy-u8", energy_rank);
  // More rank, closer to the photo.
  EXPECT_LT(rms_difference(image, rank40), rms_difference(image, rank5));
  // All kept triplets of a truncated decomposition: the error is what was never kept, > 0.
  EXPECT_GT(completions_.get("rank40-u8").relative_error, 0.01);

  {
    const Outcome png = completions_.get("rank20-png");
    ASSERT_EQ(png.code, Code::ok) << png.message;
    const std::vector<uint8_t> png_bytes(png.pixels.begin(), png.pixels.end());
    const cv::Mat decoded = cv::imdecode(png_bytes, cv::IMREAD_UNCHANGED);
    ASSERT_EQ(decoded.cols, static_cast<int>(image.shape.width));
    ASSERT_EQ(decoded.rows, static_cast<int>(image.shape.height));
    ASSERT_EQ(decoded.channels(), static_cast<int>(image.shape.channels));
    const std::string decoded_pixels(reinterpret_cast<const char*>(decoded.data),
                                     decoded.total() * decoded.elemSize());
    EXPECT_LE(max_u8_difference(decoded_pixels,
                                direct_reconstruct(*backend_, *factors, 20, OutputPixels::u8)),
              1);
  }
  {
    const Outcome f32 = completions_.get("rank12-f32");
    ASSERT_EQ(f32.code, Code::ok) << f32.message;
    ASSERT_EQ(f32.pixels.size(), image.shape.values() * sizeof(float));
    EXPECT_LE(max_f32_difference(f32.pixels,
                                 direct_reconstruct(*backend_, *factors, 12, OutputPixels::f32)),
              1.0f);
  }
  EXPECT_EQ(completions_.get("rank0").code, Code::invalid_argument);
  const Outcome too_high = completions_.get("rank41");
  EXPECT_EQ(too_high.code, Code::invalid_argument);
  EXPECT_NE(too_high.message.find("max_rank"), std::string::npos) << too_high.message;
  for (const auto& [name, outcome] : completions_.all()) EXPECT_EQ(outcome.calls, 1) << name;
}

TEST_F(CpuPipeline, CompressMatchesDecomposeThenReconstruct) {
  const std::string input = read_bytes(kImages / "messi5.jpg");
  constexpr uint32_t kRank = 12;
  {
    Pipeline pipeline(small_options(), *backend_, store_, metrics_);
    JobPtr job = compress_job(encoded(input), {.rank = kRank});
    job->on_done = completions_.handler("compress");
    pipeline.submit(std::move(job));
    JobPtr too_high = compress_job(encoded(input), {.rank = 10'000});
    too_high->on_done = completions_.handler("too-high");
    pipeline.submit(std::move(too_high));
    ASSERT_TRUE(completions_.wait_for(2));
  }
  const ImageF32 image = to_planes(decode_encoded(as_span(input), {}));
  const ImageF32* images[] = {&image};
  const auto factors = backend_->decompose(images, kRank).front();

  const Outcome outcome = completions_.get("compress");
  ASSERT_EQ(outcome.code, Code::ok) << outcome.message;
  EXPECT_EQ(outcome.rank, kRank);
  EXPECT_LE(max_u8_difference(outcome.pixels,
                              direct_reconstruct(*backend_, *factors, kRank, OutputPixels::u8)),
            1);
  EXPECT_EQ(store_.images_resident(), 0u) << "compress keeps nothing";

  const Outcome too_high = completions_.get("too-high");
  EXPECT_EQ(too_high.code, Code::invalid_argument);
  EXPECT_NE(too_high.message.find("full rank 342"), std::string::npos) << too_high.message;
}

// --- On the fake backend ------------------------------------------------------------------------

class FakePipeline : public ::testing::Test {
 protected:
  FakeBackend backend_;
  FactorStore store_{fakes::factors_only_limits(std::size_t{1} << 30, FullStoreAction::evict_lru, 64)};
  CountingMetrics metrics_;
  Completions completions_;
  std::deque<std::string> inputs_;  // requests outlive their jobs

  ImageSource small_input(unsigned seed = 1) {
    inputs_.push_back(random_samples(kSmall, seed));
    return raw_source(kSmall, inputs_.back());
  }
  std::shared_ptr<const Factors> small_factors() {
    return fakes::make_test_factors(kSmall, 8, factor_bytes_f32(kSmall, 8));
  }
  void submit(Pipeline& pipeline, JobPtr job, const std::string& name) {
    job->on_done = completions_.handler(name);
    pipeline.submit(std::move(job));
  }

  // A batch of three in the backend: one call is cancelled and one passes its deadline while it
  // computes. Those two are answered without factors, the third finishes.
  void expect_stopped_jobs_answered(JobKind kind);
};

void FakePipeline::expect_stopped_jobs_answered(JobKind kind) {
  PipelineOptions options = small_options();
  options.worker_threads = 1;
  options.batcher = {.max_batch_size = 3, .max_queue_delay = kForever};  // one batch of three
  Pipeline pipeline(options, backend_, store_, metrics_);
  backend_.close_gate();
  const auto make = [&](const std::string& name) {
    return kind == JobKind::decompose ? decompose_job(small_input(), name, 4)
                                      : compress_job(small_input(), {.rank = 2});
  };
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  JobPtr gives_up = make("gives-up");
  gives_up->is_cancelled = [cancelled] { return cancelled->load(); };
  JobPtr late = make("late");
  // Long enough to reach the backend, the only check that can see it pass.
  late->deadline = Clock::now() + 1s;
  const Clock::time_point deadline = late->deadline;
  submit(pipeline, std::move(gives_up), "gives-up");
  submit(pipeline, std::move(late), "late");
  submit(pipeline, make("finishes"), "finishes");
  ASSERT_TRUE(backend_.wait_until_entered(1));
  cancelled->store(true);
  std::this_thread::sleep_until(deadline + 1ms);  // the condition itself: the deadline passed
  backend_.open_gate();
  ASSERT_TRUE(completions_.wait_for(3));

  EXPECT_EQ(backend_.decompose_calls(), 1) << "one batch of three";
  EXPECT_EQ(backend_.decompose_images(), 3U);
  const Outcome gives_up_outcome = completions_.get("gives-up");
  EXPECT_EQ(gives_up_outcome.code, Code::cancelled) << gives_up_outcome.message;
  const Outcome late_outcome = completions_.get("late");
  EXPECT_EQ(late_outcome.code, Code::deadline_exceeded) << late_outcome.message;
  const std::string computing = std::string("while the ") + job_kind_name(kind) +
                                " job was computing";
  EXPECT_NE(late_outcome.message.find(computing), std::string::npos) << late_outcome.message;
  const Outcome finishes = completions_.get("finishes");
  EXPECT_EQ(finishes.code, Code::ok) << finishes.message;
  for (const char* name : {"gives-up", "late", "finishes"}) {
    EXPECT_EQ(completions_.get(name).calls, 1) << name;
  }
  EXPECT_FALSE(store_.info("gives-up"));
  EXPECT_FALSE(store_.info("late"));
}

TEST_F(FakePipeline, CancelledJobsNeverReachTheBackend) {
  Pipeline pipeline(small_options(), backend_, store_, metrics_);
  JobPtr reconstruct = reconstruct_job(small_factors(), {.rank = 3});
  reconstruct->is_cancelled = [] { return true; };
  submit(pipeline, std::move(reconstruct), "reconstruct");
  JobPtr decompose = decompose_job(small_input(), "d", 4);
  decompose->is_cancelled = [] { return true; };
  submit(pipeline, std::move(decompose), "decompose");
  JobPtr compress = compress_job(small_input(), {.rank = 2});
  compress->is_cancelled = [] { return true; };
  submit(pipeline, std::move(compress), "compress");
  ASSERT_TRUE(completions_.wait_for(3));

  for (const char* name : {"reconstruct", "decompose", "compress"}) {
    const Outcome outcome = completions_.get(name);
    EXPECT_EQ(outcome.code, Code::cancelled) << name << ": " << outcome.message;
    EXPECT_EQ(outcome.calls, 1) << name;
  }
  EXPECT_EQ(backend_.decompose_calls(), 0);
  EXPECT_EQ(backend_.reconstruct_calls(), 0);
  EXPECT_FALSE(store_.info("d"));
}

TEST_F(FakePipeline, JobCancelledWhileQueuedIsDroppedFromItsBatch) {
  PipelineOptions options = small_options();
  options.worker_threads = 1;
  Pipeline pipeline(options, backend_, store_, metrics_);

  backend_.close_gate();
  submit(pipeline, reconstruct_job(small_factors(), {.rank = 1}), "first");
  ASSERT_TRUE(backend_.wait_until_entered(1));  // the only worker is now held in the backend

  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  const auto factors = small_factors();
  JobPtr doomed = reconstruct_job(factors, {.rank = 2});
  doomed->is_cancelled = [cancelled] { return cancelled->load(); };
  submit(pipeline, std::move(doomed), "doomed");
  submit(pipeline, reconstruct_job(factors, {.rank = 3}), "survivor");
  cancelled->store(true);  // the client gives up while its job waits
  backend_.open_gate();
  ASSERT_TRUE(completions_.wait_for(3));

  EXPECT_EQ(completions_.get("first").code, Code::ok);
  EXPECT_EQ(completions_.get("doomed").code, Code::cancelled);
  const Outcome survivor = completions_.get("survivor");
  ASSERT_EQ(survivor.code, Code::ok) << survivor.message;
  EXPECT_EQ(survivor.pixels, std::string(kSmall.values(), '\3'));
  EXPECT_EQ(backend_.reconstruct_items(), 2u) << "only first and survivor were computed";
}

TEST_F(FakePipeline, JobsPastTheirDeadlineAreNotComputed) {
  Pipeline pipeline(small_options(), backend_, store_, metrics_);
  const Clock::time_point past = Clock::now() - 1ms;
  JobPtr reconstruct = reconstruct_job(small_factors(), {.rank = 3});
  reconstruct->deadline = past;
  submit(pipeline, std::move(reconstruct), "reconstruct");
  JobPtr decompose = decompose_job(small_input(), "d", 4);
  decompose->deadline = past;
  submit(pipeline, std::move(decompose), "decompose");
  ASSERT_TRUE(completions_.wait_for(2));

  for (const char* name : {"reconstruct", "decompose"}) {
    const Outcome outcome = completions_.get(name);
    EXPECT_EQ(outcome.code, Code::deadline_exceeded) << name << ": " << outcome.message;
    EXPECT_NE(outcome.message.find("deadline"), std::string::npos) << outcome.message;
  }
  EXPECT_EQ(backend_.decompose_calls(), 0);
  EXPECT_EQ(backend_.reconstruct_calls(), 0);
}

TEST_F(FakePipeline, DeadlinePassingWhileQueuedIsDeadlineExceeded) {
  PipelineOptions options = small_options();
  options.worker_threads = 1;
  Pipeline pipeline(options, backend_, store_, metrics_);
  backend_.close_gate();
  submit(pipeline, reconstruct_job(small_factors(), {.rank = 1}), "first");
  ASSERT_TRUE(backend_.wait_until_entered(1));

  JobPtr late = reconstruct_job(small_factors(), {.rank = 2});
  late->deadline = Clock::now() + 5ms;
  const Clock::time_point deadline = late->deadline;
  submit(pipeline, std::move(late), "late");
  std::this_thread::sleep_until(deadline + 1ms);  // the condition itself: the deadline has passed
  backend_.open_gate();
  ASSERT_TRUE(completions_.wait_for(2));
  EXPECT_EQ(completions_.get("late").code, Code::deadline_exceeded);
  EXPECT_EQ(backend_.reconstruct_items(), 1u);
}

// A PNG whose header declares width x height RGBA and whose data does not decode: a refusal
// by its header alone is not the decoder's.
std::string undecodable_rgba_png(uint32_t width, uint32_t height) {
  constexpr uint8_t kRgba = 6;
  return svdserve::test::png_header(width, height, kRgba) +
         svdserve::test::png_chunk("IDAT", std::string("\x78\x9c\x63\x00\x00", 5)) +
         svdserve::test::png_chunk("IEND", "");
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_F(FakePipeline, ComputeOverMaxComputeIsRefusedFromTheHeaderBeforeDecoding) {
  PipelineOptions options = small_options();
  options.max_compute = 60s;
  Pipeline pipeline(options, backend_, store_, metrics_);
  backend_.set_seconds_estimate(61.0);
  inputs_.push_back(undecodable_rgba_png(640, 480));
  submit(pipeline, decompose_job(encoded(inputs_.back()), "d", 64), "decompose");
  submit(pipeline, compress_job(encoded(inputs_.back()), {.energy_fraction = 1.0}), "energy");
  submit(pipeline, compress_job(encoded(inputs_.back()), {.rank = 8}), "rank");
  ASSERT_TRUE(completions_.wait_for(3));

  for (const char* name : {"decompose", "energy", "rank"}) {
    const Outcome outcome = completions_.get(name);
    EXPECT_EQ(outcome.code, Code::resource_exhausted) << name << ": " << outcome.message;
    EXPECT_TRUE(contains(outcome.message, "640x480")) << outcome.message;
    EXPECT_TRUE(contains(outcome.message, "61.0 s")) << outcome.message;
    EXPECT_TRUE(contains(outcome.message, "max_compute_ms of 60000")) << outcome.message;
  }
  EXPECT_TRUE(contains(completions_.get("energy").message, "instead of energy_fraction"));
  EXPECT_TRUE(contains(completions_.get("decompose").message, "lower max_rank"));
  // From the header: RGBA by its colour type; an energy fraction decomposes at full rank.
  std::vector<std::pair<ImageShape, uint32_t>> estimated = backend_.estimated();
  std::ranges::sort(estimated, {}, [](const auto& asked) { return asked.second; });
  const ImageShape rgba{640, 480, 4};
  EXPECT_EQ(estimated, (std::vector<std::pair<ImageShape, uint32_t>>{
                           {rgba, 8}, {rgba, 64}, {rgba, 480}}));
  EXPECT_EQ(backend_.decompose_calls(), 0);
}

TEST_F(FakePipeline, ComputeOverTheTimeLeftIsDeadlineExceeded) {
  PipelineOptions options = small_options();
  options.max_compute = 60s;
  Pipeline pipeline(options, backend_, store_, metrics_);
  backend_.set_seconds_estimate(30.0);
  inputs_.push_back(undecodable_rgba_png(640, 480));
  JobPtr hurried = decompose_job(encoded(inputs_.back()), "hurried", 64);
  hurried->deadline = Clock::now() + 10s;
  submit(pipeline, std::move(hurried), "hurried");
  submit(pipeline, decompose_job(encoded(inputs_.back()), "patient", 64), "patient");
  ASSERT_TRUE(completions_.wait_for(2));

  const Outcome hurried_outcome = completions_.get("hurried");
  EXPECT_EQ(hurried_outcome.code, Code::deadline_exceeded) << hurried_outcome.message;
  EXPECT_TRUE(contains(hurried_outcome.message, "30.0 s of compute")) << hurried_outcome.message;
  EXPECT_TRUE(contains(hurried_outcome.message, "s left; allow a longer deadline"))
      << hurried_outcome.message;
  // Within max_compute and without a deadline: admitted, then refused by the decoder.
  EXPECT_EQ(completions_.get("patient").code, Code::invalid_argument);
}

TEST_F(FakePipeline, MaxComputeZeroAdmitsAnyEstimate) {
  PipelineOptions options = small_options();
  options.max_compute = 0ms;
  Pipeline pipeline(options, backend_, store_, metrics_);
  backend_.set_seconds_estimate(1e9);
  submit(pipeline, decompose_job(small_input(), "d", 4), "decompose");
  submit(pipeline, compress_job(small_input(), {.energy_fraction = 0.9}), "compress");
  ASSERT_TRUE(completions_.wait_for(2));
  EXPECT_EQ(completions_.get("decompose").code, Code::ok) << completions_.get("decompose").message;
  EXPECT_EQ(completions_.get("compress").code, Code::ok) << completions_.get("compress").message;
}

TEST_F(FakePipeline, DecomposeJobsStoppedWhileComputingAreAnsweredAndTheirBatchFinishes) {
  expect_stopped_jobs_answered(JobKind::decompose);
}

TEST_F(FakePipeline, CompressJobsStoppedWhileComputingAreAnsweredAndTheirBatchFinishes) {
  expect_stopped_jobs_answered(JobKind::compress);
}

TEST_F(FakePipeline, FullQueueRefusesAtSubmitOnTheCallingThread) {
  PipelineOptions options = small_options();
  options.queue_capacity = 1;
  options.worker_threads = 1;
  options.batcher.max_batch_size = 1;
  Pipeline pipeline(options, backend_, store_, metrics_);
  backend_.close_gate();
  submit(pipeline, reconstruct_job(small_factors(), {.rank = 1}), "job0");
  ASSERT_TRUE(backend_.wait_until_entered(1));

  // With the only worker held, a few jobs fit between the queues and the batcher; then admission
  // must refuse. While the worker is held nothing admitted can complete, so a completion right
  // after submit() is a refusal.
  constexpr int kMaxJobs = 100;
  int jobs = 1;
  int refused = 0;
  while (refused < 3) {
    ASSERT_LT(jobs, kMaxJobs) << "admission never refused";
    const std::string name = "job" + std::to_string(jobs++);
    submit(pipeline, reconstruct_job(small_factors(), {.rank = 1}), name);
    if (!completions_.has(name)) continue;
    const Outcome outcome = completions_.get(name);
    ++refused;
    EXPECT_EQ(outcome.code, Code::resource_exhausted) << outcome.message;
    EXPECT_NE(outcome.message.find("queue is full (1 jobs)"), std::string::npos)
        << outcome.message;
    EXPECT_EQ(outcome.thread, std::this_thread::get_id()) << "refusals complete inside submit";
  }

  backend_.open_gate();
  ASSERT_TRUE(completions_.wait_for(static_cast<std::size_t>(jobs)));
  int computed = 0;
  for (const auto& [name, outcome] : completions_.all()) {
    EXPECT_EQ(outcome.calls, 1) << name;
    if (outcome.code == Code::ok) ++computed;
  }
  EXPECT_EQ(computed + refused, jobs);
  EXPECT_EQ(backend_.reconstruct_items(), static_cast<std::size_t>(computed));
}

TEST_F(FakePipeline, WaitForRoomGivesUpAtTheDeadlineOrGetsIn) {
  PipelineOptions options = small_options();
  options.queue_capacity = 1;
  options.worker_threads = 1;
  options.batcher.max_batch_size = 1;
  Pipeline pipeline(options, backend_, store_, metrics_);
  backend_.close_gate();
  submit(pipeline, reconstruct_job(small_factors(), {.rank = 1}), "held");
  ASSERT_TRUE(backend_.wait_until_entered(1));

  // Jobs that wait a little for room get in until everything behind the held worker is full;
  // then one waits out its deadline inside submit() and is refused.
  int impatient = 0;
  for (;; ++impatient) {
    ASSERT_LT(impatient, 100) << "the queues never filled";
    const std::string name = "impatient" + std::to_string(impatient);
    JobPtr job = reconstruct_job(small_factors(), {.rank = 1});
    job->wait_for_room = true;
    job->deadline = Clock::now() + 10ms;
    submit(pipeline, std::move(job), name);
    if (!completions_.has(name)) continue;
    const Outcome outcome = completions_.get(name);
    EXPECT_EQ(outcome.code, Code::resource_exhausted) << outcome.message;
    break;
  }

  std::thread patient_client([&] {
    JobPtr patient = reconstruct_job(small_factors(), {.rank = 2});
    patient->wait_for_room = true;
    patient->deadline = Clock::now() + kPatience;
    submit(pipeline, std::move(patient), "patient");
  });
  backend_.open_gate();
  patient_client.join();
  ASSERT_TRUE(completions_.wait_for(static_cast<std::size_t>(impatient) + 3));
  EXPECT_EQ(completions_.get("patient").code, Code::ok);
  EXPECT_EQ(completions_.get("held").code, Code::ok);
}

TEST_F(FakePipeline, ShutdownDrainsAdmittedJobsThenRefuses) {
  PipelineOptions options = small_options();
  options.batcher = {.max_batch_size = 4, .max_queue_delay = kForever};  // only size or shutdown
  Pipeline pipeline(options, backend_, store_, metrics_);
  constexpr int kReconstructs = 6;
  constexpr int kDecomposes = 5;
  for (int i = 0; i < kReconstructs; ++i) {
    submit(pipeline, reconstruct_job(small_factors(), {.rank = 2}), "r" + std::to_string(i));
  }
  for (int i = 0; i < kDecomposes; ++i) {
    const std::string id = "d" + std::to_string(i);
    submit(pipeline, decompose_job(small_input(static_cast<unsigned>(i)), id, 4), id);
  }
  pipeline.shutdown();  // returns once every admitted job is finished

  EXPECT_EQ(completions_.total(), static_cast<std::size_t>(kReconstructs + kDecomposes));
  for (const auto& [name, outcome] : completions_.all()) {
    EXPECT_EQ(outcome.calls, 1) << name;
    EXPECT_EQ(outcome.code, Code::ok) << name << ": " << outcome.message;
  }
  for (int i = 0; i < kDecomposes; ++i) EXPECT_TRUE(store_.info("d" + std::to_string(i)));
  EXPECT_EQ(backend_.reconstruct_items(), static_cast<std::size_t>(kReconstructs));
  EXPECT_EQ(backend_.decompose_images(), static_cast<std::size_t>(kDecomposes));
  EXPECT_EQ(pipeline.decode_queue_depth(), 0u);
  EXPECT_EQ(pipeline.compute_queue_depth(), 0u);

  submit(pipeline, reconstruct_job(small_factors(), {.rank = 2}), "late-reconstruct");
  submit(pipeline, decompose_job(small_input(), "late", 4), "late-decompose");
  for (const char* name : {"late-reconstruct", "late-decompose"}) {
    ASSERT_TRUE(completions_.has(name)) << "refused inside submit";
    const Outcome outcome = completions_.get(name);
    EXPECT_EQ(outcome.code, Code::unavailable) << outcome.message;
    EXPECT_EQ(outcome.calls, 1);
  }
  EXPECT_FALSE(store_.info("late"));
  pipeline.shutdown();  // idempotent
}

TEST_F(FakePipeline, FailedBatchFailsItsJobsAndServingGoesOn) {
  PipelineOptions options = small_options();
  options.batcher = {.max_batch_size = 2, .max_queue_delay = kForever};
  Pipeline pipeline(options, backend_, store_, metrics_);
  backend_.set_fail_decompose(true);
  submit(pipeline, decompose_job(small_input(1), "a", 4), "a");
  submit(pipeline, decompose_job(small_input(2), "b", 4), "b");
  ASSERT_TRUE(completions_.wait_for(2));
  for (const char* name : {"a", "b"}) {
    const Outcome outcome = completions_.get(name);
    EXPECT_EQ(outcome.code, Code::internal) << name;
    EXPECT_NE(outcome.message.find("solver failed on purpose"), std::string::npos)
        << outcome.message;
    EXPECT_FALSE(store_.info(name));
  }

  backend_.set_fail_decompose(false);
  submit(pipeline, decompose_job(small_input(3), "c", 4), "c");
  submit(pipeline, decompose_job(small_input(4), "d", 4), "d");
  ASSERT_TRUE(completions_.wait_for(4));
  EXPECT_EQ(completions_.get("c").code, Code::ok);
  EXPECT_EQ(completions_.get("c").batch_size, 2u);
  EXPECT_TRUE(store_.info("c"));
}

TEST_F(FakePipeline, ABatchRejectedForOneImageFailsOnlyThatImagesRequest) {
  PipelineOptions options = small_options();
  options.batcher = {.max_batch_size = 4, .max_queue_delay = kForever};  // one batch of four
  Pipeline pipeline(options, backend_, store_, metrics_);
  backend_.set_reject_u16(true);
  const std::string wide_samples(kSmall.values() * 2, '\x10');
  for (int i = 0; i < 4; ++i) {
    const std::string id = "image" + std::to_string(i);
    ImageSource source = small_input(static_cast<unsigned>(i));
    if (i == 2) {
      source = RawPixels{kSmall.width, kSmall.height, kSmall.channels, SampleType::u16,
                         as_span(wide_samples)};
    }
    submit(pipeline, decompose_job(std::move(source), id, 4), id);
  }
  ASSERT_TRUE(completions_.wait_for(4));
  for (int i = 0; i < 4; ++i) {
    const std::string id = "image" + std::to_string(i);
    const Outcome outcome = completions_.get(id);
    EXPECT_EQ(outcome.calls, 1) << id;
    if (i == 2) {
      EXPECT_EQ(outcome.code, Code::invalid_argument) << outcome.message;
      EXPECT_FALSE(store_.info(id));
    } else {
      EXPECT_EQ(outcome.code, Code::ok) << id << ": " << outcome.message;
      EXPECT_TRUE(store_.info(id)) << id;
    }
  }
  // The batch of four, then each of its images alone.
  EXPECT_EQ(backend_.decompose_calls(), 5);
}

TEST_F(FakePipeline, JpegsTheBackendDecodesReachItUndecodedWithTheirHeadersShape) {
  backend_.set_takes_jpeg(true);
  {
    Pipeline pipeline(small_options(), backend_, store_, metrics_);
    inputs_.push_back(read_bytes(kImages / "baboon.jpg"));
    submit(pipeline, decompose_job(encoded(inputs_.back()), "jpeg", 4), "jpeg");
    submit(pipeline, decompose_file_job(kImages / "baboon.jpg", "jpeg-file", 4), "jpeg-file");
    submit(pipeline, decompose_file_job(kImages / "pic1.png", "png", 4), "png");
    ASSERT_TRUE(completions_.wait_for(3));
  }
  EXPECT_EQ(backend_.jpeg_images(), 2U) << "the PNG is decoded on the host";
  const cv::Mat reference =
      cv::imread((kImages / "baboon.jpg").string(), cv::IMREAD_UNCHANGED);
  for (const char* id : {"jpeg", "jpeg-file"}) {
    ASSERT_EQ(completions_.get(id).code, Code::ok) << completions_.get(id).message;
    const auto info = store_.info(id);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->shape, (ImageShape{static_cast<uint32_t>(reference.cols),
                                       static_cast<uint32_t>(reference.rows),
                                       static_cast<uint32_t>(reference.channels())}));
  }
}

TEST_F(FakePipeline, DecodeErrorsFailOnlyTheirJob) {
  Pipeline pipeline(small_options(), backend_, store_, metrics_);
  inputs_.push_back("not an image");
  submit(pipeline, decompose_job(encoded(inputs_.back()), "garbage", 4), "garbage");
  JobPtr missing = decompose_file_job(kImages / "no-such-file.png", "missing", 4);
  submit(pipeline, std::move(missing), "missing");
  submit(pipeline, decompose_job(small_input(), "fine", 4), "fine");
  ASSERT_TRUE(completions_.wait_for(3));
  EXPECT_EQ(completions_.get("garbage").code, Code::invalid_argument);
  const Outcome missing_outcome = completions_.get("missing");
  EXPECT_EQ(missing_outcome.code, Code::invalid_argument);
  EXPECT_NE(missing_outcome.message.find("cannot read the image file"), std::string::npos)
      << missing_outcome.message;
  EXPECT_EQ(completions_.get("fine").code, Code::ok);
}

TEST_F(FakePipeline, StoreOutcomesReachTheJob) {
  // Room for exactly one small image: the second evicts the first.
  const std::size_t one_image = factor_bytes_f32(kSmall, 4);
  FactorStore tight(fakes::factors_only_limits(one_image, FullStoreAction::evict_lru, 8));
  FactorStore refusing(fakes::factors_only_limits(one_image, FullStoreAction::reject, 8));
  {
    Pipeline pipeline(small_options(), backend_, tight, metrics_);
    submit(pipeline, decompose_job(small_input(1), "first", 4), "first");
    ASSERT_TRUE(completions_.wait_for(1));
    submit(pipeline, decompose_job(small_input(2), "second", 4), "second");
    ASSERT_TRUE(completions_.wait_for(2));
  }
  EXPECT_EQ(completions_.get("second").evicted_ids, std::vector<std::string>{"first"});
  {
    Pipeline pipeline(small_options(), backend_, refusing, metrics_);
    submit(pipeline, decompose_job(small_input(1), "kept", 4), "kept");
    ASSERT_TRUE(completions_.wait_for(3));
    submit(pipeline, decompose_job(small_input(2), "refused", 4), "refused");
    ASSERT_TRUE(completions_.wait_for(4));
  }
  EXPECT_EQ(completions_.get("kept").code, Code::ok);
  EXPECT_EQ(completions_.get("refused").code, Code::resource_exhausted);
  EXPECT_TRUE(refusing.info("kept"));
  EXPECT_FALSE(refusing.info("refused"));
}

TEST_F(FakePipeline, OutputOverTheMessageLimitIsResourceExhausted) {
  PipelineOptions options = small_options();
  options.max_output_bytes = kSmall.values();  // u8 fits exactly, f32 does not
  Pipeline pipeline(options, backend_, store_, metrics_);
  submit(pipeline, reconstruct_job(small_factors(), {.rank = 2}, OutputFormat::raw_u8), "u8");
  submit(pipeline, reconstruct_job(small_factors(), {.rank = 2}, OutputFormat::raw_f32),
         "f32");
  ASSERT_TRUE(completions_.wait_for(2));
  EXPECT_EQ(completions_.get("u8").code, Code::ok);
  const Outcome f32 = completions_.get("f32");
  EXPECT_EQ(f32.code, Code::resource_exhausted);
  EXPECT_NE(f32.message.find("max_message_bytes"), std::string::npos) << f32.message;
}

// Raw outputs of jobs that ask for it, and PNG's raw pixels, are written into pool memory; the
// protobuf paths get strings. A pool buffer goes back however its job ends.
TEST_F(FakePipeline, OutputsUsePoolMemoryWhereAskedAndAlwaysGiveItBack) {
  Pipeline pipeline(small_options(), backend_, store_, metrics_);
  auto pooled = [&](uint32_t rank, OutputFormat format = OutputFormat::raw_u8) {
    JobPtr job = reconstruct_job(small_factors(), {.rank = rank}, format);
    job->pixels_in_pool = true;
    return job;
  };
  submit(pipeline, pooled(3), "pooled");
  submit(pipeline, reconstruct_job(small_factors(), {.rank = 4}), "string");
  submit(pipeline, reconstruct_job(small_factors(), {.rank = 5}, OutputFormat::png), "png");
  ASSERT_TRUE(completions_.wait_for(3));
  const Outcome in_pool = completions_.get("pooled");
  ASSERT_EQ(in_pool.code, Code::ok) << in_pool.message;
  EXPECT_TRUE(in_pool.pixels_in_pool_memory);
  EXPECT_EQ(in_pool.pixels, std::string(kSmall.values(), '\3'));
  const Outcome as_string = completions_.get("string");
  EXPECT_FALSE(as_string.pixels_in_pool_memory);
  EXPECT_EQ(as_string.pixels, std::string(kSmall.values(), '\4'));
  const Outcome png = completions_.get("png");
  ASSERT_EQ(png.code, Code::ok) << png.message;
  EXPECT_FALSE(png.pixels_in_pool_memory);  // the PNG is a string; its raw pixels were pooled

  // Failures after the buffer was taken: the backend fails, or the job was over the limit.
  backend_.set_fail_reconstruct(true);
  submit(pipeline, pooled(3), "failed");
  submit(pipeline, pooled(99), "bad-rank");
  ASSERT_TRUE(completions_.wait_for(5));
  EXPECT_EQ(completions_.get("failed").code, Code::internal);
  EXPECT_EQ(completions_.get("bad-rank").code, Code::invalid_argument);

  pipeline.shutdown();
  const HostBufferPoolStats stats = pipeline.host_buffer_stats();
  EXPECT_EQ(stats.in_use_bytes, 0u);
  EXPECT_GE(stats.allocations + stats.reuses, 3u);  // pooled, png's raw pixels, failed
  EXPECT_EQ(stats.fallbacks, 0u);
}

// PNG and JPEG answers are encoded on the encoder threads, not on the thread that finished the
// batch (here the worker, which answers the batch's raw job), and decode to the raw pixels.
TEST_F(FakePipeline, EncodedAnswersLeaveTheCompletionThread) {
  PipelineOptions options = small_options();
  options.batcher = {.max_batch_size = 3, .max_queue_delay = kForever};  // the three together
  Pipeline pipeline(options, backend_, store_, metrics_);
  submit(pipeline, reconstruct_job(small_factors(), {.rank = 5}), "raw");
  submit(pipeline, reconstruct_job(small_factors(), {.rank = 5}, OutputFormat::png), "png");
  JobPtr jpeg = reconstruct_job(small_factors(), {.rank = 5}, OutputFormat::jpeg);
  jpeg->jpeg_quality = 100;
  submit(pipeline, std::move(jpeg), "jpeg");
  ASSERT_TRUE(completions_.wait_for(3));

  const Outcome raw = completions_.get("raw");
  const Outcome png = completions_.get("png");
  const Outcome jpg = completions_.get("jpeg");
  ASSERT_EQ(raw.code, Code::ok) << raw.message;
  ASSERT_EQ(png.code, Code::ok) << png.message;
  ASSERT_EQ(jpg.code, Code::ok) << jpg.message;
  EXPECT_EQ(raw.batch_size, 3u);
  EXPECT_NE(png.thread, raw.thread);
  EXPECT_NE(jpg.thread, raw.thread);
  const cv::Mat from_png =
      cv::imdecode(std::vector<uint8_t>(png.pixels.begin(), png.pixels.end()), cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(from_png.empty());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(from_png.data), from_png.total() * 3),
            raw.pixels);
  const cv::Mat from_jpeg =
      cv::imdecode(std::vector<uint8_t>(jpg.pixels.begin(), jpg.pixels.end()), cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(from_jpeg.empty());
  EXPECT_EQ(from_jpeg.channels(), 3);
  EXPECT_LE(max_u8_difference(std::string(reinterpret_cast<const char*>(from_jpeg.data),
                                          from_jpeg.total() * 3),
                              raw.pixels),
            2);  // a flat image at quality 100
}

// A 4-channel image cannot be a JPEG: refused before any compute, for compress too (whose
// channels are known only after decoding).
TEST_F(FakePipeline, FourChannelJpegIsRefusedBeforeCompute) {
  Pipeline pipeline(small_options(), backend_, store_, metrics_);
  const ImageShape bgra{8, 6, 4};
  inputs_.push_back(random_samples(bgra, 3));
  submit(pipeline, compress_job(raw_source(bgra, inputs_.back()), {.rank = 2}, OutputFormat::jpeg),
         "compress");
  submit(pipeline,
         reconstruct_job(fakes::make_test_factors(bgra, 4, factor_bytes_f32(bgra, 4)), {.rank = 2},
                         OutputFormat::jpeg),
         "reconstruct");
  ASSERT_TRUE(completions_.wait_for(2));
  for (const char* name : {"compress", "reconstruct"}) {
    const Outcome outcome = completions_.get(name);
    EXPECT_EQ(outcome.code, Code::invalid_argument) << name;
    EXPECT_NE(outcome.message.find("OUTPUT_FORMAT_PNG"), std::string::npos) << outcome.message;
  }
  EXPECT_EQ(backend_.reconstruct_calls(), 0);
}

// Shutdown while many answers wait for one encoder: it returns only once every one is encoded
// and answered, and nothing is left queued.
TEST_F(FakePipeline, ShutdownAnswersEveryQueuedEncode) {
  PipelineOptions options = small_options();
  options.encoder_threads = 1;
  options.worker_threads = 1;
  options.batcher = {.max_batch_size = 32, .max_queue_delay = kForever};
  constexpr int kJobs = 32;
  const ImageShape large{256, 192, 3};  // enough that encoding them takes a while
  const auto factors = fakes::make_test_factors(large, 8, factor_bytes_f32(large, 8));
  Pipeline pipeline(options, backend_, store_, metrics_);
  backend_.close_gate();
  for (int i = 0; i < kJobs; ++i) {
    const OutputFormat format = i % 2 == 0 ? OutputFormat::png : OutputFormat::jpeg;
    submit(pipeline, reconstruct_job(factors, {.rank = 1 + static_cast<uint32_t>(i % 8)}, format),
           std::to_string(i));
  }
  auto stopped = std::async(std::launch::async, [&] { pipeline.shutdown(); });
  ASSERT_TRUE(backend_.wait_until_entered(1));  // the batch, flushed by the shutdown
  EXPECT_EQ(completions_.total(), 0u);
  backend_.open_gate();
  ASSERT_EQ(stopped.wait_for(kPatience), std::future_status::ready) << "shutdown did not end";

  EXPECT_EQ(completions_.total(), static_cast<std::size_t>(kJobs));
  for (const auto& [name, outcome] : completions_.all()) {
    EXPECT_EQ(outcome.calls, 1) << name;
    EXPECT_EQ(outcome.code, Code::ok) << name << ": " << outcome.message;
    const cv::Mat decoded = cv::imdecode(
        std::vector<uint8_t>(outcome.pixels.begin(), outcome.pixels.end()), cv::IMREAD_UNCHANGED);
    EXPECT_EQ(decoded.cols, 256) << name;
  }
  EXPECT_EQ(pipeline.encode_queue_depth(), 0u);
  EXPECT_EQ(pipeline.jobs_in_flight(), 0);
  EXPECT_EQ(pipeline.host_buffer_stats().in_use_bytes, 0u);
}

// Many clients, every kind of outcome at once: each job's on_done runs exactly once.
TEST_F(FakePipeline, EveryJobCompletesExactlyOnce) {
  PipelineOptions options = small_options();
  options.queue_capacity = 8;  // small enough that some submits are refused
  options.loader_threads = 2;
  options.batcher = {.max_batch_size = 3, .max_queue_delay = 50us};
  constexpr int kClients = 3;
  constexpr int kJobsPerClient = 100;
  // Inputs are made up front: the clients only read them.
  const std::string good_samples = random_samples(kSmall, 5);
  const ImageSource good = raw_source(kSmall, good_samples);
  const std::string short_samples = "short";
  const ImageSource bad = raw_source({4, 4, 1}, short_samples);
  const auto factors = small_factors();

  std::map<Code, int> codes;
  {
    Pipeline pipeline(options, backend_, store_, metrics_);
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c) {
      clients.emplace_back([&, c] {
        for (int i = 0; i < kJobsPerClient; ++i) {
          const std::string name = std::to_string(c) + "/" + std::to_string(i);
          JobPtr job;
          switch (i % 6) {
            case 0: job = reconstruct_job(factors, {.rank = 1 + static_cast<uint32_t>(i % 8)}); break;
            case 1: job = decompose_job(good, name, 4); break;
            case 2:
              job = compress_job(good, {.rank = 3}, i % 4 == 0 ? OutputFormat::png : OutputFormat::jpeg);
              break;
            case 3: job = reconstruct_job(factors, {.rank = 99}); break;  // invalid rank
            case 4: job = decompose_job(bad, name, 4); break;            // decode error
            case 5:
              job = reconstruct_job(factors, {.rank = 2});
              if (i % 4 == 1) job->is_cancelled = [] { return true; };
              else job->deadline = Clock::now() - 1ms;
              break;
          }
          submit(pipeline, std::move(job), name);
        }
      });
    }
    for (auto& client : clients) client.join();
    pipeline.shutdown();
  }

  const auto outcomes = completions_.all();
  ASSERT_EQ(outcomes.size(), static_cast<std::size_t>(kClients * kJobsPerClient));
  EXPECT_EQ(completions_.total(), outcomes.size());
  for (const auto& [name, outcome] : outcomes) {
    EXPECT_EQ(outcome.calls, 1) << name;
    ++codes[outcome.code];
  }
  EXPECT_GT(codes[Code::ok], 0);
  EXPECT_GT(codes[Code::invalid_argument], 0);
  for (const auto& [code, count] : codes) {
    EXPECT_TRUE(code == Code::ok || code == Code::invalid_argument ||
                code == Code::cancelled ||
                code == Code::deadline_exceeded ||
                code == Code::resource_exhausted)
        << code << " x" << count;
  }
}

}  // namespace
}  // namespace svdserve
