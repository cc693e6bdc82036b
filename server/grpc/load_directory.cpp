// LoadDirectory: decompose every image of a folder below one of the server's load roots
// (load_roots.hpp). The folder is walked on a thread of its own (it may hold thousands of files
// and the pipeline's admission must be waited for); the loader threads read and decode each file,
// the workers decompose it. An entry that cannot be loaded gets its own status in the answer; the
// call as a whole still succeeds. Answers name files by their paths below the root, never the
// server's absolute paths.

#include <condition_variable>

#include "kernels/errors.hpp"
#include "server/grpc/request_translation.hpp"
#include "server/grpc/response_fields.hpp"
#include "server/grpc/service.hpp"
#include "server/grpc/status_mapping.hpp"
#include "server/runtime/image_listing.hpp"
#include "server/runtime/logger.hpp"

namespace svdserve {
namespace {

constexpr std::size_t kMaxConcurrentLoads = 4;

// Results of one LoadDirectory call, filled by job completions on worker threads.
struct LoadProgress {
  std::mutex mutex;
  std::condition_variable all_done;
  std::size_t remaining = 0;  // guarded by mutex
};

}  // namespace

grpc::ServerUnaryReactor* SvdService::LoadDirectory(grpc::CallbackServerContext* ctx,
                                                    const grpc::ByteBuffer* request_bytes,
                                                    grpc::ByteBuffer* response_bytes) {
  return unary<v1::LoadDirectoryRequest, v1::LoadDirectoryResponse>(
      ctx, "LoadDirectory", request_bytes, response_bytes,
      [&](const UnaryCall& call, const Caller& caller, const v1::LoadDirectoryRequest* request,
          v1::LoadDirectoryResponse* response) {
        audit(*ctx, caller, "LoadDirectory");
        check_accepting();
        // Before any work: a path outside every root is refused without being opened.
        LoadRoots::Folder folder = load_roots_.open(request->path());
        const uint32_t max_rank = ranks_.rank_to_keep(request->max_rank());
        const bool recursive = request->recursive();

        std::lock_guard lock(directory_loads_mutex_);
        std::erase_if(directory_loads_, [](const auto& load) { return load->done.load(); });
        if (directory_loads_.size() >= kMaxConcurrentLoads) {
          throw ResourceExhausted("too many LoadDirectory calls at once (" +
                                  std::to_string(kMaxConcurrentLoads) +
                                  "); retry when one finishes");
        }
        // Room first: once the thread runs it may finish the call, so nothing after it may throw.
        directory_loads_.reserve(directory_loads_.size() + 1);
        auto load = std::make_unique<DirectoryLoad>();
        DirectoryLoad* self = load.get();
        load->thread = std::jthread([this, self, ctx, call, response, folder = std::move(folder),
                                     max_rank, recursive, images = caller.images] {
          const std::vector<ListedImage> entries =
              list_images(*folder.root, folder.below_root, recursive);
          LoadProgress progress;
          for (const ListedImage& entry : entries) {
            auto* result = response->add_results();
            result->set_path(entry.path);
            result->set_id(entry.path);
            if (entry.skipped) {
              fill_status(to_status(std::make_exception_ptr(*entry.skipped)),
                          result->mutable_status());
            } else {
              ++progress.remaining;
            }
          }
          for (std::size_t i = 0; i < entries.size(); ++i) {
            if (entries[i].skipped) continue;
            v1::LoadResult* result = response->mutable_results(static_cast<int>(i));
            try {
              check_image_id(result->id());  // a path below the root can be longer than an id
            } catch (...) {
              fill_status(to_status(std::current_exception()), result->mutable_status());
              std::lock_guard done_lock(progress.mutex);
              --progress.remaining;
              continue;
            }
            JobPtr job = make_job(ctx, JobKind::decompose, "LoadDirectory");
            job->source = ImageFile{folder.root, entries[i].path};
            job->image_id = images.stored_id(result->id());
            job->max_rank = max_rank;
            job->wait_for_room = true;
            job->on_done = [&progress, &images, result, &cache = context_.cache](
                               Job& done, std::exception_ptr error) {
              if (!error) {
                fill_shape(done.factors->shape(), result->mutable_shape());
                result->set_rank_kept(done.factors->rank_kept());
              }
              // As a Decompose: the file's result is OK once the repository has its factors.
              const auto finish = [&progress, &images, result](std::exception_ptr failure) {
                fill_status(to_status(images.in_client_terms(failure, result->id())),
                            result->mutable_status());
                std::lock_guard done_lock(progress.mutex);
                if (--progress.remaining == 0) progress.all_done.notify_all();
              };
              if (error) {
                finish(error);
              } else {
                cache.persist(done.image_id, done.factors, finish);
              }
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
          log().info("load_directory folder=\"{}\" loaded={} failed={}", folder.below_root, loaded,
                     entries.size() - loaded);
          call.finish(grpc::Status::OK);
          self->done.store(true);
        });
        directory_loads_.push_back(std::move(load));
      });
}

}  // namespace svdserve
