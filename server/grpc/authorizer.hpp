#pragma once
// Who is calling, checked before any work of a call starts: the bearer token in the call's
// `authorization` metadata, its role against the method's (method_roles.hpp), and the namespace
// its ids live in. Refusals are UNAUTHENTICATED (no token, or one the server does not know) and
// PERMISSION_DENIED (a role too low); neither depends on the request, so neither says whether
// an id exists. Token values are never logged or answered.

#include <grpcpp/grpcpp.h>

#include <string>
#include <string_view>

#include "server/auth/token_digest.hpp"
#include "server/auth/token_file_watch.hpp"
#include "server/grpc/image_namespace.hpp"

namespace svdserve {

// What the service knows of a call's sender once it is authorized.
struct Caller {
  std::string token_name;  // the token file's name for it; empty without authentication
  ImageNamespace images;
};

class Authorizer {
 public:
  // tokens == nullptr: no authentication (no token_file); every call is an unnamed caller
  // without a namespace. Otherwise `tokens` outlives this.
  explicit Authorizer(TokenFileWatch* tokens);

  // The caller of a call of `method`, or throws Unauthenticated / PermissionDenied. A known
  // token refused for a write or admin method is audited (audit() below, refused=...).
  [[nodiscard]] Caller authorize(const grpc::ServerContextBase& ctx,
                                 std::string_view method) const;

  // A token only this process knows, an admin without a namespace: the server's own calls over
  // its in-process channel (--load-dir) carry it.
  [[nodiscard]] const std::string& process_token() const noexcept { return process_token_; }

  [[nodiscard]] bool enabled() const noexcept { return tokens_ != nullptr; }

 private:
  TokenFileWatch* tokens_;
  const std::string process_token_;
  const TokenDigest process_token_digest_;
};

// The audit line of a write or admin call, once authorized:
//   audit peer=<peer> token=<name> method=<method> id=<the client's id, or ->
// Nothing without authentication (there is no one to name).
void audit(const grpc::ServerContextBase& ctx, const Caller& caller, std::string_view method,
           std::string_view client_id = {});

}  // namespace svdserve
