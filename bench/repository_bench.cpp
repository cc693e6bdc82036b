// What the factor repository costs, no gRPC: for one image of SIZE² RGB at rank K on the CPU or
// GPU backend, with the folder repository (and Redis where --redis names one):
//   write  the sync-durability path of one Decompose: to_host, encode (CRC-32), put (the folder:
//          write, fsync, rename, fsync of the folder);
//   hit    find of a resident image, then its reconstruction (u8);
//   miss   find of an image only the repository holds (get, checksum, from_host, insert: memory
//          holds one image, two alternate), then its reconstruction.
// Each next to what bounds it in the same run: memcpy and CRC-32 of the entry's bytes, and the
// stages timed one by one. Factor values are random: no cost depends on them.
//
// usage: svdserve_repository_bench [--backend cpu|gpu] [--size N] [--rank K] [--repeats R]
//                                  [--data-dir DIR] [--redis HOST:PORT]
//                                  [--redis-password-file FILE]

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/backend.hpp"
#include "server/repository/directory_repository.hpp"
#include "server/repository/factor_cache.hpp"
#include "server/repository/factor_codec.hpp"
#include "server/repository/redis_repository.hpp"
#if SVDSERVE_HAVE_CUDA
#include "kernels/gpu/gpu_backend.hpp"
#endif

namespace {

using namespace svdserve;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string backend = "cpu";
  uint32_t size = 1024;
  uint32_t rank = 64;
  int repeats = 20;
  std::string data_dir = "repository-bench-data";
  std::string redis;  // empty: no Redis rows
  std::string redis_password_file;
};

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--backend") options.backend = value;
    else if (flag == "--size") options.size = static_cast<uint32_t>(std::atoi(value));
    else if (flag == "--rank") options.rank = static_cast<uint32_t>(std::atoi(value));
    else if (flag == "--repeats") options.repeats = std::max(1, std::atoi(value));
    else if (flag == "--data-dir") options.data_dir = value;
    else if (flag == "--redis") options.redis = value;
    else if (flag == "--redis-password-file") options.redis_password_file = value;
    else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      std::exit(2);
    }
  }
  return options;
}

std::unique_ptr<Backend> make_backend(const Options& options) {
#if SVDSERVE_HAVE_CUDA
  if (options.backend == "gpu") {
    gpu::GpuBackendOptions gpu_options;
    gpu_options.budget_bytes = std::size_t{4} << 30;
    return gpu::make_gpu_backend(gpu_options);
  }
#endif
  if (options.backend != "cpu") {
    std::fprintf(stderr, "backend %s is not built in\n", options.backend.c_str());
    std::exit(2);
  }
  return make_cpu_backend({});
}

HostFactors random_factors(const Options& options) {
  const ImageShape shape{options.size, options.size, 3};
  HostFactors factors{.shape = shape, .rank_kept = options.rank, .energy = 1e12, .u = {},
                      .singular_values = {}, .vt = {}};
  std::mt19937 random(7);
  std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(float(options.size)));
  for (uint32_t c = 0; c < 3; ++c) {
    std::vector<float> u(std::size_t{shape.height} * options.rank), s(options.rank),
        vt(std::size_t{options.rank} * shape.width);
    for (float& value : u) value = normal(random);
    for (uint32_t k = 0; k < options.rank; ++k) s[k] = 4000.0f / float(k + 1);
    for (float& value : vt) value = normal(random);
    factors.u.push_back(std::move(u));
    factors.singular_values.push_back(std::move(s));
    factors.vt.push_back(std::move(vt));
  }
  return factors;
}

// Median milliseconds of `repeats` runs of `work`.
double median_ms(int repeats, const std::function<void()>& work) {
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    work();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

void row(const char* what, double ms, double bytes, const char* note = "") {
  std::printf("%-44s %10.3f ms %10.2f GB/s  %s\n", what, ms, bytes / (ms * 1e6), note);
}

void measure(const char* name, Backend& backend, std::unique_ptr<FactorRepository> repository,
             const HostFactors& host, const Options& options) {
  const std::string encoded = encode_factors("bench", host, 0);
  const double bytes = static_cast<double>(encoded.size());
  FactorRepository& raw = *repository;
  std::printf("\n== %s, %ux%u RGB at rank %u: %.1f MB an entry\n", name, options.size,
              options.size, options.rank, bytes / 1e6);

  std::string copy(encoded.size(), '\0');
  row("limit: memcpy of the entry", median_ms(options.repeats, [&] {
        std::memcpy(copy.data(), encoded.data(), encoded.size());
      }), bytes);
  row("limit: CRC-32 of the entry (zlib)", median_ms(options.repeats, [&] {
        volatile uLong crc = crc32_z(0L, reinterpret_cast<const Bytef*>(encoded.data()),
                                     encoded.size());
        (void)crc;
      }), bytes);

  // Write path, stage by stage, then whole (sync durability).
  FactorStoreLimits one_image;
  const std::shared_ptr<const Factors> factors = backend.from_host(host);
  one_image.budget_bytes = FactorStore(FactorStoreLimits{}).counted_bytes("a", *factors) + 4096;
  FactorStore store(one_image);
  FactorCache cache(store, backend, std::move(repository), {.durability = Durability::sync});
  const double to_host_ms = median_ms(options.repeats, [&] { (void)backend.to_host(*factors); });
  row("write: to_host", to_host_ms, bytes);
  row("write: encode (copy + CRC-32)",
      median_ms(options.repeats, [&] { (void)encode_factors("bench", host, 0); }), bytes);
  row("write: put", median_ms(options.repeats, [&] { raw.put("bench", encoded); }), bytes);
  int written = 0;
  const double write_ms = median_ms(options.repeats, [&] {
    const std::string id = written++ % 2 ? "a" : "b";
    (void)store.insert(id, factors);
    std::promise<void> done;
    cache.persist(id, factors, [&](std::exception_ptr) { done.set_value(); });
    done.get_future().wait();
  });
  row("write: whole (sync Decompose's share)", write_ms, bytes);

  // Miss: "a" and "b" alternate in a memory that holds one.
  row("miss: get", median_ms(options.repeats, [&] { (void)raw.get("a"); }), bytes);
  row("miss: decode (checksum + copy)",
      median_ms(options.repeats, [&] { (void)decode_factors(encoded); }), bytes);
  row("miss: from_host", median_ms(options.repeats, [&] { (void)backend.from_host(host); }), bytes);
  std::vector<std::byte> pixels(std::size_t{options.size} * options.size * 3);
  const auto reconstruct = [&](const Factors& f) {
    const ReconstructItem item{&f, options.rank, OutputPixels::u8, pixels};
    backend.reconstruct(std::span(&item, 1));
  };
  int asked = 0;
  const double miss_ms = median_ms(options.repeats, [&] {
    reconstruct(*cache.find(asked++ % 2 ? "a" : "b"));
  });
  const double hit_ms = median_ms(options.repeats, [&] { reconstruct(*cache.find("b")); });
  row("hit: find + reconstruct", hit_ms, bytes);
  char note[64];
  std::snprintf(note, sizeof(note), "%.1fx the hit", miss_ms / hit_ms);
  row("miss: find (load) + reconstruct", miss_ms, bytes, note);
  const RepositoryCounters counters = cache.counters();
  std::printf("counters: hits %llu, misses %llu, loads %llu, writes %llu\n",
              static_cast<unsigned long long>(counters.hits),
              static_cast<unsigned long long>(counters.misses),
              static_cast<unsigned long long>(counters.loads),
              static_cast<unsigned long long>(counters.writes));
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  try {
    std::unique_ptr<Backend> backend = make_backend(options);
    std::printf("backend %s: %s\n", backend->name().c_str(),
                backend->device_description().c_str());
    const HostFactors host = random_factors(options);
    std::filesystem::remove_all(options.data_dir);
    measure("folder repository", *backend,
            std::make_unique<DirectoryRepository>(options.data_dir), host, options);
    if (!options.redis.empty()) {
      measure("Redis repository", *backend,
              std::make_unique<RedisRepository>(RedisOptions{
                  .address = options.redis,
                  .username = {},
                  .password = options.redis_password_file.empty()
                                  ? std::string()
                                  : read_redis_password(options.redis_password_file),
                  .timeout = std::chrono::milliseconds(2000),
                  .pool_size = 4,
                  .key_prefix = "svdserve-bench:"}),
              host, options);
    }
    std::filesystem::remove_all(options.data_dir);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "repository_bench: %s\n", error.what());
    return 1;
  }
  return 0;
}
