#pragma once
// Runs independent items on a few threads: how the CLI keeps several calls in flight.

#include <cstddef>
#include <functional>

namespace svdserve::cli {

// Calls work(i) for every i in [0, count) from min(concurrency, count) threads, each taking the
// next index when its previous item is done; returns when all are done. If work throws, the
// remaining items are skipped and the first exception is rethrown here.
void parallel_for(std::size_t count, std::size_t concurrency, const std::function<void(std::size_t)>& work);

}  // namespace svdserve::cli
