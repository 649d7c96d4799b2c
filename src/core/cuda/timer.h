// core/cuda/timer.h: CUDA-event timing for `recops bench` (performance.md: events around the
// region, never wall-clock around asynchronous launches). Torch-free. In a build without CUDA
// the timer exists but every call returns a cuda_error Status saying so.
#pragma once

#include "recops/status.h"

namespace recops::core::cuda {

class EventTimer {
 public:
  explicit EventTimer(int device_index = 0);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  // Records the start / stop event on `stream` (a cudaStream_t; nullptr = legacy default stream).
  Status start(void* stream);
  Status stop(void* stream);
  // Waits for the stop event and gives the milliseconds between the two events.
  Status elapsed_ms(double* ms);

 private:
  void* start_ = nullptr;  // cudaEvent_t
  void* stop_ = nullptr;
  int device_ = 0;
  Status init_;
};

}  // namespace recops::core::cuda

#ifndef RECOPS_WITH_CUDA
// The stub of the build without CUDA (timer.cpp is compiled only with CUDA).
namespace recops::core::cuda {
inline EventTimer::EventTimer(int device_index)
    : device_(device_index),
      init_(StatusCode::cuda_error, "recops was built without CUDA (RECOPS_WITH_CUDA=OFF)") {}
inline EventTimer::~EventTimer() = default;
inline Status EventTimer::start(void*) {
  return init_;
}
inline Status EventTimer::stop(void*) {
  return init_;
}
inline Status EventTimer::elapsed_ms(double* ms) {
  *ms = 0;
  return init_;
}
}  // namespace recops::core::cuda
#endif
