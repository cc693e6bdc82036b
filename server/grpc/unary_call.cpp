#include "server/grpc/unary_call.hpp"

#include "server/runtime/logger.hpp"

namespace svdserve {

void UnaryCall::finish(const grpc::Status& status) const {
  metrics_->record_call(method_, status.error_code());
  if (!status.ok()) {
    log().debug("call failed method={} code={} message=\"{}\"", method_,
                code_name(status.error_code()), status.error_message());
  }
  reactor_->Finish(status);
}

}  // namespace svdserve
