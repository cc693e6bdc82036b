#include "server/grpc/call_metrics.hpp"

#include "server/grpc/status_mapping.hpp"

namespace svdserve {

MetricLabels service_metric_labels() {
  MetricLabels labels;
  const google::protobuf::ServiceDescriptor* service =
      v1::ReconstructRequest::descriptor()->file()->FindServiceByName("SvdServe");
  for (int i = 0; i < service->method_count(); ++i) labels.methods.push_back(service->method(i)->name());
  labels.item_methods = {"ReconstructStream", "ReconstructBatch"};
  labels.job_methods = {"Decompose",         "Reconstruct", "ReconstructBatch",
                        "ReconstructStream", "ReconstructProgressive", "Compress",
                        "LoadDirectory"};
  labels.codes = answered_codes();
  return labels;
}

}  // namespace svdserve
