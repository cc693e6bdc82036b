#include "server/grpc/authorizer.hpp"

#include <algorithm>
#include <cctype>

#include "kernels/errors.hpp"
#include "server/grpc/method_roles.hpp"
#include "server/runtime/logger.hpp"

namespace svdserve {
namespace {

constexpr std::string_view kAuthorizationKey = "authorization";
constexpr std::string_view kBearer = "bearer ";  // the scheme is case-insensitive (RFC 7235)
// The name the process's own calls are audited under: ':' is no token file name's character.
constexpr std::string_view kProcessCallerName = "svdserve:self";

std::string_view trimmed(std::string_view text) noexcept {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) noexcept {
  return text.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), text.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

// The token of `authorization: Bearer <token>`; throws Unauthenticated without one.
std::string_view bearer_token(const grpc::ServerContextBase& ctx) {
  const auto& metadata = ctx.client_metadata();
  const auto found =
      metadata.find(grpc::string_ref(kAuthorizationKey.data(), kAuthorizationKey.size()));
  if (found == metadata.end()) {
    throw Unauthenticated(
        "this server needs a token: send the metadata 'authorization: Bearer <token>' "
        "(svdserve-cli --token-file FILE or $SVDSERVE_TOKEN)");
  }
  const std::string_view value(found->second.data(), found->second.size());
  const std::string_view token =
      starts_with_ignoring_case(value, kBearer) ? trimmed(value.substr(kBearer.size())) : "";
  if (token.empty()) {
    throw Unauthenticated("the authorization metadata must be 'Bearer <token>'");
  }
  return token;
}

void log_audit(const grpc::ServerContextBase& ctx, std::string_view token_name,
               std::string_view method, std::string_view client_id, std::string_view refused) {
  const std::string peer = ctx.peer();
  const std::string_view id = client_id.empty() ? "-" : client_id;
  if (refused.empty()) {
    log().info("audit peer={} token={} method={} id={}", peer, token_name, method, id);
  } else {
    log().info("audit peer={} token={} method={} id={} refused={}", peer, token_name, method, id,
               refused);
  }
}

}  // namespace

Authorizer::Authorizer(TokenFileWatch* tokens)
    : tokens_(tokens),
      process_token_(random_token()),
      process_token_digest_(digest_of(process_token_)) {}

Caller Authorizer::authorize(const grpc::ServerContextBase& ctx, std::string_view method) const {
  const std::optional<Role> needed = required_role(method);
  if (!needed) throw PermissionDenied("no token may call this method");
  if (tokens_ == nullptr) return {};
  const TokenDigest digest = digest_of(bearer_token(ctx));
  if (same_digest(digest, process_token_digest_)) return {std::string(kProcessCallerName), {}};
  const std::shared_ptr<const TokenTable> table = tokens_->current();
  const TokenEntry* entry = table->find(digest);
  if (entry == nullptr) {
    throw Unauthenticated(
        "the token is not valid on this server (mistyped, revoked, or meant for another "
        "server); ask the server's operator for one");
  }
  if (!allows(entry->role, *needed)) {
    log_audit(ctx, entry->name, method, {}, "PERMISSION_DENIED");
    throw PermissionDenied(std::string(method) + " needs a token with the " +
                           std::string(role_name(*needed)) + " role; this one has the " +
                           std::string(role_name(entry->role)) +
                           " role. Ask the server's operator for one that may");
  }
  return {entry->name, ImageNamespace(entry->id_prefix)};
}

void audit(const grpc::ServerContextBase& ctx, const Caller& caller, std::string_view method,
           std::string_view client_id) {
  if (caller.token_name.empty()) return;
  log_audit(ctx, caller.token_name, method, client_id, {});
}

}  // namespace svdserve
