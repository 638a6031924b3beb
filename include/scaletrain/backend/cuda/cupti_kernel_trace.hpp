// KernelTrace on cuda (backend/kernel_trace.hpp): CUPTI's activity records of the kernels, copies and
// fills the process runs. libcupti is loaded with dlopen when a trace is asked for, so scaletrain
// neither links it nor needs it on a node that never profiles.
#pragma once
#include <memory>
#include <string>

#include "scaletrain/backend/kernel_trace.hpp"

namespace scaletrain::cuda {

// A trace of every CUDA context of this process: kernels by demangled name, copies as "memcpy HtoD"
// (DtoH, DtoD, HtoH), fills as "memset". Null, with one sentence in `why_not`, when libcupti cannot
// be loaded or lacks an entry point, when CUPTI refuses the activity kinds (privileges, another
// profiler attached), or while another trace of this process exists (CUPTI serves one at a time).
std::unique_ptr<KernelTrace> make_cupti_kernel_trace(std::string& why_not);

}  // namespace scaletrain::cuda
