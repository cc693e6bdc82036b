// LoadDirectory: decompose every image of a folder on the server. The folder is walked on a
// thread of its own (it may hold thousands of files and the pipeline's admission must be waited
// for); the loader threads read and decode each file, the workers decompose it. An entry that
// cannot be loaded gets its own status in the answer; the call as a whole still succeeds.

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <set>

#include "kernels/errors.hpp"
#include "server/grpc/request_translation.hpp"
#include "server/grpc/response_fields.hpp"
#include "server/grpc/service.hpp"
#include "server/grpc/status_mapping.hpp"
#include "server/runtime/image_file.hpp"
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

// An entry of the folder walk: an image file to load, or one skipped, with the reason.
struct FolderEntry {
  fs::path path;
  std::string skipped;  // why, naming the path; empty: load it
};

// The image files of a folder (and of its subfolders when recursive), sorted. Nothing is
// followed: an image-named entry that is not a regular file (a symbolic link, a FIFO, a device)
// and a folder that cannot be read are listed as skipped rather than failing the whole call.
std::vector<FolderEntry> list_images(const fs::path& folder, bool recursive) {
  std::vector<FolderEntry> entries;
  std::vector<fs::path> folders{folder};
  while (!folders.empty()) {
    const fs::path current = std::move(folders.back());
    folders.pop_back();
    std::error_code error;
    for (fs::directory_iterator it(current, error), end; !error && it != end;
         it.increment(error)) {
      std::error_code entry_error;
      const fs::file_type type = it->symlink_status(entry_error).type();
      const fs::path& path = it->path();
      if (type == fs::file_type::directory) {
        if (recursive) folders.push_back(path);
      } else if (is_image_file(path)) {
        std::string skipped;
        if (entry_error) {
          skipped = path.string() + " could not be read: " + entry_error.message();
        } else if (type != fs::file_type::regular) {
          skipped = not_a_regular_file("'" + path.string() + "'", type);
        }
        entries.push_back({path, std::move(skipped)});
      }
    }
    if (error) {
      entries.push_back({current, current.string() + " could not be read: " + error.message()});
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const FolderEntry& a, const FolderEntry& b) { return a.path < b.path; });
  return entries;
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
  return unary(ctx, "LoadDirectory", [&](const UnaryCall& call, const Caller& caller) {
    audit(*ctx, caller, "LoadDirectory");
    check_accepting();
    const fs::path folder(request->path());
    if (request->path().empty()) throw InvalidArgument("path is empty; name a folder on the server");
    std::error_code ignored;
    if (!fs::is_directory(folder, ignored)) {
      throw NotFound(quote_client_text(request->path()) +
                     " is not a folder on the server (mount it into the container, e.g. -v "
                     "/host/images:/data)");
    }
    const uint32_t max_rank = ranks_.rank_to_keep(request->max_rank());
    const bool recursive = request->recursive();

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
    load->thread = std::jthread([this, self, ctx, call, response, folder, max_rank, recursive,
                                 images = caller.images] {
      const std::vector<FolderEntry> entries = list_images(folder, recursive);
      LoadProgress progress;
      for (const FolderEntry& entry : entries) {
        auto* result = response->add_results();
        result->set_path(entry.path.string());
        result->set_id(entry.path.lexically_relative(folder).string());
        if (entry.skipped.empty()) {
          ++progress.remaining;
        } else {
          fill_status(to_status(std::make_exception_ptr(InvalidArgument(entry.skipped))),
                      result->mutable_status());
        }
      }
      for (std::size_t i = 0; i < entries.size(); ++i) {
        if (!entries[i].skipped.empty()) continue;
        v1::LoadResult* result = response->mutable_results(static_cast<int>(i));
        try {
          check_image_id(result->id());  // a path under the folder can be longer than an id
        } catch (...) {
          fill_status(to_status(std::current_exception()), result->mutable_status());
          std::lock_guard done_lock(progress.mutex);
          --progress.remaining;
          continue;
        }
        JobPtr job = make_job(ctx, JobKind::decompose, "LoadDirectory");
        job->source = ImageFile{entries[i].path.string()};
        job->image_id = images.stored_id(result->id());
        job->max_rank = max_rank;
        job->wait_for_room = true;
        job->on_done = [&progress, &images, result](Job& done, std::exception_ptr error) {
          fill_status(to_status(images.in_client_terms(error, result->id())),
                      result->mutable_status());
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
      response->set_failed(static_cast<uint32_t>(entries.size()) - loaded);
      log().info("load_directory path={} loaded={} failed={}", folder.string(), loaded,
                 entries.size() - loaded);
      call.finish(grpc::Status::OK);
      self->done.store(true);
    });
    directory_loads_.push_back(std::move(load));
  });
}

}  // namespace svdserve
