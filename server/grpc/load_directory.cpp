// LoadDirectory: decompose every image of a folder on the server. The folder is walked on a
// thread of its own (it may hold thousands of files and the pipeline's admission must be waited
// for); the loader threads read and decode each file, the workers decompose it.

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <set>

#include "kernels/errors.hpp"
#include "server/grpc/response_fields.hpp"
#include "server/grpc/service.hpp"
#include "server/grpc/status_mapping.hpp"
#include "server/runtime/logger.hpp"

namespace svdserve {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxConcurrentLoads = 4;

bool is_image_file(const fs::path& path) {
  static const std::set<std::string> extensions = {".png", ".jpg",  ".jpeg", ".tif", ".tiff",
                                                   ".bmp", ".pgm",  ".ppm",  ".pnm", ".webp"};
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return extensions.contains(ext);
}

std::vector<fs::path> list_images(const fs::path& folder, bool recursive) {
  std::vector<fs::path> files;
  auto consider = [&](const fs::directory_entry& entry) {
    if (entry.is_regular_file() && is_image_file(entry.path())) files.push_back(entry.path());
  };
  if (recursive) {
    for (const auto& entry : fs::recursive_directory_iterator(folder)) consider(entry);
  } else {
    for (const auto& entry : fs::directory_iterator(folder)) consider(entry);
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Results of one LoadDirectory call, filled by job completions on worker threads.
struct LoadProgress {
  std::mutex mutex;
  std::condition_variable all_done;
  std::size_t remaining = 0;  // guarded by mutex
};

}  // namespace

grpc::ServerUnaryReactor* SvdService::LoadDirectory(grpc::CallbackServerContext* ctx,
                                                    const v1::LoadDirectoryRequest* request,
                                                    v1::LoadDirectoryResponse* response) {
  return unary(ctx, "LoadDirectory", [&](const UnaryCall& call) {
    check_accepting();
    const fs::path folder(request->path());
    if (request->path().empty()) throw InvalidArgument("path is empty; name a folder on the server");
    std::error_code ignored;
    if (!fs::is_directory(folder, ignored)) {
      throw NotFound("'" + request->path() + "' is not a folder on the server (mount it into the "
                     "container, e.g. -v /host/images:/data)");
    }
    const uint32_t max_rank = ranks_.rank_to_keep(request->max_rank());
    std::vector<fs::path> files = list_images(folder, request->recursive());

    std::lock_guard lock(directory_loads_mutex_);
    std::erase_if(directory_loads_, [](const auto& load) { return load->done.load(); });
    if (directory_loads_.size() >= kMaxConcurrentLoads) {
      throw ResourceExhausted("too many LoadDirectory calls at once (" +
                              std::to_string(kMaxConcurrentLoads) + "); retry when one finishes");
    }
    // Room first: once the thread runs it may finish the call, so nothing after it may throw.
    directory_loads_.reserve(directory_loads_.size() + 1);
    auto load = std::make_unique<DirectoryLoad>();
    DirectoryLoad* self = load.get();
    load->thread = std::jthread([this, self, ctx, call, response, folder, max_rank,
                                 files = std::move(files)] {
      LoadProgress progress;
      progress.remaining = files.size();
      for (const fs::path& file : files) {
        auto* result = response->add_results();
        result->set_path(file.string());
        result->set_id(fs::relative(file, folder).string());
      }
      for (std::size_t i = 0; i < files.size(); ++i) {
        v1::LoadResult* result = response->mutable_results(static_cast<int>(i));
        JobPtr job = make_job(ctx, JobKind::decompose, "LoadDirectory");
        job->source = ImageFile{files[i].string()};
        job->image_id = result->id();
        job->max_rank = max_rank;
        job->wait_for_room = true;
        job->on_done = [&progress, result](Job& done, std::exception_ptr error) {
          fill_status(to_status(error), result->mutable_status());
          if (!error) {
            fill_shape(done.factors->shape(), result->mutable_shape());
            result->set_rank_kept(done.factors->rank_kept());
          }
          std::lock_guard done_lock(progress.mutex);
          if (--progress.remaining == 0) progress.all_done.notify_all();
        };
        context_.pipeline.submit(std::move(job));
      }
      {
        std::unique_lock wait_lock(progress.mutex);
        progress.all_done.wait(wait_lock, [&] { return progress.remaining == 0; });
      }
      uint32_t loaded = 0;
      for (const auto& result : response->results()) loaded += result.status().code() == 0;
      response->set_loaded(loaded);
      response->set_failed(static_cast<uint32_t>(files.size()) - loaded);
      log().info("load_directory path={} loaded={} failed={}", folder.string(), loaded,
                 files.size() - loaded);
      call.finish(grpc::Status::OK);
      self->done.store(true);
    });
    directory_loads_.push_back(std::move(load));
  });
}

}  // namespace svdserve
