#pragma once
// The part of nvJPEG's C API that svdserve calls, declared here so that the build needs no
// nvjpeg.h (the CUDA toolkit of the build and CI machines ships none): values and layouts are
// those of CUDA 13's nvjpeg.h. The library itself is loaded at run time (nvjpeg_library.hpp).

#include <cuda_runtime_api.h>

#include <cstddef>

namespace svdserve::gpu::nvjpeg {

using Status = int;  // nvjpegStatus_t
inline constexpr Status kSuccess = 0;
inline constexpr Status kInvalidParameter = 2;
inline constexpr Status kBadJpeg = 3;
inline constexpr Status kJpegNotSupported = 4;
inline constexpr Status kAllocatorFailure = 5;
inline constexpr Status kArchMismatch = 7;
inline constexpr Status kIncompleteBitstream = 10;

enum Backend : int {  // nvjpegBackend_t
  kBackendDefault = 0,
  kBackendHardware = 3,
};

enum OutputFormat : int {  // nvjpegOutputFormat_t
  kOutputY = 2,     // luma only, into channel[0]
  kOutputBgrI = 6,  // interleaved BGR, into channel[0]: OpenCV's layout
};

// nvjpegCreateEx flags: chroma upsampled by interpolation, as libjpeg's "fancy upsampling" does,
// instead of by replication.
inline constexpr unsigned int kFlagUpsamplingWithInterpolation = 1U << 5;

inline constexpr int kMaxComponents = 4;

struct Image {  // nvjpegImage_t
  unsigned char* channel[kMaxComponents];
  std::size_t pitch[kMaxComponents];
};

struct HandleOpaque;
struct StateOpaque;
struct StreamOpaque;
using Handle = HandleOpaque*;     // nvjpegHandle_t: thread-safe
using State = StateOpaque*;       // nvjpegJpegState_t: one per thread/stream
using JpegStream = StreamOpaque*; // nvjpegJpegStream_t: a parsed header

// The entry points, resolved by name from the shared library.
struct Api {
  Status (*nvjpegCreateEx)(int backend, void* device_allocator, void* pinned_allocator,
                           unsigned int flags, Handle* handle);
  Status (*nvjpegDestroy)(Handle handle);
  Status (*nvjpegJpegStateCreate)(Handle handle, State* state);
  Status (*nvjpegJpegStateDestroy)(State state);
  Status (*nvjpegJpegStreamCreate)(Handle handle, JpegStream* stream);
  Status (*nvjpegJpegStreamDestroy)(JpegStream stream);
  Status (*nvjpegJpegStreamParseHeader)(Handle handle, const unsigned char* data,
                                        std::size_t length, JpegStream stream);
  Status (*nvjpegDecodeBatchedSupported)(Handle handle, JpegStream stream, int* is_supported);
  Status (*nvjpegDecodeBatchedInitialize)(Handle handle, State state, int batch_size,
                                          int max_cpu_threads, int output_format);
  Status (*nvjpegDecodeBatched)(Handle handle, State state, const unsigned char* const* data,
                                const std::size_t* lengths, Image* destinations,
                                cudaStream_t stream);
  Status (*nvjpegDecode)(Handle handle, State state, const unsigned char* data, std::size_t length,
                         int output_format, Image* destination, cudaStream_t stream);
};

}  // namespace svdserve::gpu::nvjpeg
