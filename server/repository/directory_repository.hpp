#pragma once
// The factor repository in a folder: one file per image, named by the SHA-256 of its id (ids may
// hold any character and be longer than a file name), written to a temporary name, fsync'd,
// renamed over the old file and the folder fsync'd, so that a crash leaves the old entry or the
// new one. Several servers may share the folder (an NFS export, a Kubernetes volume): renames are
// atomic there too, and each writer's temporary names are its own.

#include <filesystem>
#include <string>

#include "server/repository/factor_repository.hpp"
#include "server/runtime/file_descriptor.hpp"

namespace svdserve {

class DirectoryRepository final : public FactorRepository {
 public:
  // Creates the folder when missing. Throws InvalidArgument when it cannot be created, opened or
  // written (the message names the folder: it is the operator's, in the start-up log).
  explicit DirectoryRepository(std::filesystem::path folder);

  [[nodiscard]] std::string describe() const override;
  void put(const std::string& id, std::string_view encoded) override;
  [[nodiscard]] std::optional<std::string> get(const std::string& id) override;
  bool erase(const std::string& id) override;
  void scan(std::size_t head_bytes,
            const std::function<void(const RepositoryEntryHead&)>& visit) override;

  // The file name of an id's entry, relative to the folder.
  [[nodiscard]] static std::string file_name(const std::string& id);

 private:
  void sync_folder() const;
  void remove_stale_temporaries() const;

  const std::filesystem::path folder_;
  FileDescriptor folder_fd_;
};

}  // namespace svdserve
