// CuptiKernelTrace (backend/cuda/cupti_kernel_trace.hpp): CUPTI's activity API through dlopen. CUPTI's
// headers give the types and record layouts only; the entry points are looked up in libcupti at run
// time, since the kit ships without it and a node has its own. CUPTI hands records back through C
// callbacks, so one trace at a time is active in the process and the callbacks feed that one.
#include "scaletrain/backend/cuda/cupti_kernel_trace.hpp"

#include <cupti_activity.h>
#include <cupti_result.h>
#include <cupti_version.h>
#include <cxxabi.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <unordered_map>

#include "scaletrain/core/check_cuda.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain::cuda {
namespace {

constexpr size_t kBufferBytes = size_t{8} << 20;  // one activity buffer
constexpr size_t kBufferAlign = 8;                // CUPTI's required alignment of a buffer
constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET};
// The record structs CUDA 13's cupti_activity.h names for those kinds; their layout is that of a
// CUPTI of the same major version, which load_cupti() checks.
using KernelRecordV = CUpti_ActivityKernel10;
using MemcpyRecordV = CUpti_ActivityMemcpy6;
using MemsetRecordV = CUpti_ActivityMemset4;

const char* kind_name(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL";
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return "CUPTI_ACTIVITY_KIND_MEMCPY";
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return "CUPTI_ACTIVITY_KIND_MEMSET";
    default:
      return "an activity kind";
  }
}

// libcupti's entry points, resolved once per process. The library stays loaded for the process's
// life: CUPTI keeps its own threads and our callbacks once activity was enabled.
struct Cupti {
  void* lib = nullptr;
  std::string soname;    // the name dlopen accepted
  std::string file;      // where the loader found it (dladdr)
  uint32_t version = 0;  // cuptiGetVersion: 130001 for CUDA 13.0 Update 1
  std::string why_not;   // set when CUPTI cannot be used

  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuptiGetVersion) get_version = nullptr;
  decltype(&cuptiGetErrorMessage) error_message = nullptr;  // optional: only for the description

  // "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (<CUPTI's description>)"; the number when CUPTI has no name.
  std::string result(CUptiResult rc) const {
    const char* name = nullptr;
    const char* text = nullptr;
    std::string s = result_string && result_string(rc, &name) == CUPTI_SUCCESS && name
                        ? name
                        : "CUPTI result " + std::to_string(static_cast<int>(rc));
    if (error_message && error_message(rc, &text) == CUPTI_SUCCESS && text && *text && s != text)
      s += std::string(" (") + text + ")";
    return s;
  }
  template <class Fn>
  void find(Fn& fn, const char* name, std::string& missing) {
    fn = reinterpret_cast<Fn>(dlsym(lib, name));
    if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(name);
  }
};

bool open_library(Cupti& c) {
  std::string errors;
  for (const char* name : {"libcupti.so.13", "libcupti.so"}) {
    c.lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (c.lib) {
      c.soname = name;
      return true;
    }
    const char* e = dlerror();
    errors += (errors.empty() ? "" : "; ") + std::string(e ? e : name);
  }
  c.why_not = "CUPTI is not loadable (tried libcupti.so.13 and libcupti.so: " + errors +
              "); add the directory holding libcupti (the CUDA toolkit's extras/CUPTI/lib64 or "
              "targets/x86_64-linux/lib) to LD_LIBRARY_PATH";
  return false;
}

bool find_entry_points(Cupti& c) {
  std::string missing;
  c.find(c.enable, "cuptiActivityEnable", missing);
  c.find(c.disable, "cuptiActivityDisable", missing);
  c.find(c.register_callbacks, "cuptiActivityRegisterCallbacks", missing);
  c.find(c.flush_all, "cuptiActivityFlushAll", missing);
  c.find(c.next_record, "cuptiActivityGetNextRecord", missing);
  c.find(c.dropped, "cuptiActivityGetNumDroppedRecords", missing);
  c.find(c.result_string, "cuptiGetResultString", missing);
  c.find(c.get_version, "cuptiGetVersion", missing);
  c.error_message = reinterpret_cast<decltype(c.error_message)>(dlsym(c.lib, "cuptiGetErrorMessage"));
  if (missing.empty()) return true;
  c.why_not = "CUPTI '" + c.soname + "' lacks " + missing + " (not NVIDIA's CUPTI, or too old a one)";
  return false;
}

// The record layouts read here are those of this build's CUPTI major version (13).
bool check_version(Cupti& c) {
  if (const CUptiResult rc = c.get_version(&c.version); rc != CUPTI_SUCCESS) {
    c.why_not = "cuptiGetVersion failed: " + c.result(rc);
    return false;
  }
  if (c.version / 10000 == CUPTI_API_VERSION / 10000) return true;
  c.why_not = "CUPTI '" + c.file + "' has API version " + std::to_string(c.version) + ", not the CUDA " +
              std::to_string(CUPTI_API_VERSION / 10000) +
              " CUPTI whose activity record layouts this build reads (API version " +
              std::to_string(CUPTI_API_VERSION) + ")";
  return false;
}

Cupti load_cupti() {
  Cupti c;
  if (!open_library(c) || !find_entry_points(c)) return c;
  Dl_info info{};
  c.file = dladdr(reinterpret_cast<void*>(c.enable), &info) && info.dli_fname ? info.dli_fname : c.soname;
  check_version(c);
  return c;
}

// Never destroyed: CUPTI may call back while the process exits.
const Cupti& cupti() {
  static const Cupti* c = new Cupti(load_cupti());
  return *c;
}

// No CUPTI call is made while holding g_mu outside the callbacks: CUPTI may hold its own locks while
// it calls buffer_completed, which takes g_mu.
class CuptiKernelTrace;
std::mutex g_mu;                       // guards g_active; held while a buffer is read into it
CuptiKernelTrace* g_active = nullptr;  // the trace CUPTI's callbacks feed (the process's one trace)
bool g_callbacks_registered = false;   // touched only by the thread whose trace holds g_active

std::string demangle(const char* raw) {
  if (!raw) return "(unnamed kernel)";
  int status = 0;
  char* d = abi::__cxa_demangle(raw, nullptr, nullptr, &status);
  std::string name = status == 0 && d ? d : raw;
  std::free(d);
  return name;
}

// Indexed by CUpti_ActivityMemcpyKind.
const char* copy_name(uint8_t copy_kind) {
  static constexpr const char* kNames[] = {"memcpy",      "memcpy HtoD", "memcpy DtoH", "memcpy HtoA",
                                           "memcpy AtoH", "memcpy AtoA", "memcpy AtoD", "memcpy DtoA",
                                           "memcpy DtoD", "memcpy HtoH", "memcpy PtoP"};
  static_assert(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD == 1 && CUPTI_ACTIVITY_MEMCPY_KIND_DTOH == 2 &&
                CUPTI_ACTIVITY_MEMCPY_KIND_HTOA == 3 && CUPTI_ACTIVITY_MEMCPY_KIND_ATOH == 4 &&
                CUPTI_ACTIVITY_MEMCPY_KIND_ATOA == 5 && CUPTI_ACTIVITY_MEMCPY_KIND_ATOD == 6 &&
                CUPTI_ACTIVITY_MEMCPY_KIND_DTOA == 7 && CUPTI_ACTIVITY_MEMCPY_KIND_DTOD == 8 &&
                CUPTI_ACTIVITY_MEMCPY_KIND_HTOH == 9 && CUPTI_ACTIVITY_MEMCPY_KIND_PTOP == 10);
  return copy_kind < std::size(kNames) ? kNames[copy_kind] : "memcpy";
}

class CuptiKernelTrace final : public KernelTrace {
 public:
  explicit CuptiKernelTrace(const Cupti& api) : api_(api) {}
  ~CuptiKernelTrace() override {
    if (!holds_slot()) return;  // refused in make_cupti_kernel_trace: another trace is active
    if (on_) disable_kinds();
    (void)api_.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard lk(g_mu);
    g_active = nullptr;
  }
  CuptiKernelTrace(const CuptiKernelTrace&) = delete;
  CuptiKernelTrace& operator=(const CuptiKernelTrace&) = delete;

  std::string source() const override;
  void start() override;
  void stop() override;
  std::vector<KernelRecord> take() override;

  // CUPTI's buffer-completed callback, under g_mu: the buffer's records into the tally.
  void absorb(uint8_t* buffer, size_t valid_bytes);

 private:
  void add(const CUpti_Activity& r);
  void tally(const std::string& name, uint64_t start_ns, uint64_t end_ns);
  const std::string& kernel_name(const char* raw);
  void disable_kinds();
  bool holds_slot() const {
    std::lock_guard lk(g_mu);
    return g_active == this;
  }

  const Cupti& api_;
  bool on_ = false;
  mutable std::mutex mu_;  // guards the members below
  std::unordered_map<std::string, KernelRecord> records_;
  std::unordered_map<std::string, std::string> demangled_;  // mangled -> demangled
  int64_t dropped_ = 0;                                     // since the last take()
  int64_t dropped_total_ = 0;                               // since the trace was made
};

std::string CuptiKernelTrace::source() const {
  const uint32_t v = api_.version;
  std::string dir = api_.file.substr(0, api_.file.find_last_of('/') + 1);
  std::string s = "CUPTI " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) +
                  " activity records (API version " + std::to_string(v) + ", " + api_.soname +
                  (dir.empty() ? "" : " from " + dir) + ")";
  std::lock_guard lk(mu_);
  if (dropped_total_) s += "; " + std::to_string(dropped_total_) + " records dropped for lack of buffer space";
  return s;
}

void CuptiKernelTrace::start() {
  if (on_) return;
  for (CUpti_ActivityKind k : kKinds)
    if (const CUptiResult rc = api_.enable(k); rc != CUPTI_SUCCESS)
      ST_FAIL("cuptiActivityEnable(", kind_name(k), ") failed: ", api_.result(rc));
  on_ = true;
}

// Disabling before the flush keeps work queued after stop() out of this window's records.
void CuptiKernelTrace::stop() {
  if (!on_) return;
  ST_CUDA_CHECK(cudaDeviceSynchronize());
  disable_kinds();
  on_ = false;
  if (const CUptiResult rc = api_.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); rc != CUPTI_SUCCESS)
    ST_FAIL("cuptiActivityFlushAll failed: ", api_.result(rc));
}

std::vector<KernelRecord> CuptiKernelTrace::take() {
  std::vector<KernelRecord> out;
  std::lock_guard lk(mu_);
  out.reserve(records_.size() + 1);
  for (auto& [name, r] : records_) out.push_back(std::move(r));
  records_.clear();
  std::sort(out.begin(), out.end(), [](const KernelRecord& a, const KernelRecord& b) {
    return a.seconds != b.seconds ? a.seconds > b.seconds : a.name < b.name;
  });
  if (dropped_) out.push_back(KernelRecord{"(dropped records)", dropped_, 0.0});
  dropped_ = 0;
  return out;
}

void CuptiKernelTrace::absorb(uint8_t* buffer, size_t valid_bytes) {
  std::lock_guard lk(mu_);
  CUpti_Activity* r = nullptr;
  while (api_.next_record(buffer, valid_bytes, &r) == CUPTI_SUCCESS) add(*r);
  size_t dropped = 0;
  if (api_.dropped(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped) {
    dropped_ += static_cast<int64_t>(dropped);
    dropped_total_ += static_cast<int64_t>(dropped);
  }
}

void CuptiKernelTrace::add(const CUpti_Activity& r) {
  switch (r.kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& k = reinterpret_cast<const KernelRecordV&>(r);
      tally(kernel_name(k.name), k.start, k.end);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = reinterpret_cast<const MemcpyRecordV&>(r);
      tally(copy_name(m.copyKind), m.start, m.end);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = reinterpret_cast<const MemsetRecordV&>(r);
      tally("memset", m.start, m.end);
      break;
    }
    default:
      break;
  }
}

// A record without timestamps (CUPTI lacked device memory for them) counts, with no time.
void CuptiKernelTrace::tally(const std::string& name, uint64_t start_ns, uint64_t end_ns) {
  KernelRecord& rec = records_[name];
  if (rec.name.empty()) rec.name = name;
  ++rec.count;
  if (start_ns && end_ns > start_ns) rec.seconds += static_cast<double>(end_ns - start_ns) * 1e-9;
}

const std::string& CuptiKernelTrace::kernel_name(const char* raw) {
  const std::string key = raw ? raw : "";
  auto it = demangled_.find(key);
  if (it == demangled_.end()) it = demangled_.emplace(key, demangle(raw)).first;
  return it->second;
}

void CuptiKernelTrace::disable_kinds() {
  for (CUpti_ActivityKind k : kKinds) (void)api_.disable(k);
}

// CUPTI's callbacks: C functions, no exception may leave them.
void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_bytes) {
  try {
    std::lock_guard lk(g_mu);
    if (g_active && buffer) g_active->absorb(buffer, valid_bytes);
  } catch (...) {
    // Out of memory while tallying: the buffer's remaining records are lost, the process goes on.
  }
  std::free(buffer);
}

// Registers the callbacks (once per process), then enables and disables each kind once, so that a
// refusal is a why_not now rather than an error at the first measured step.
bool probe_kinds(const Cupti& c, std::string& why_not) {
  if (!g_callbacks_registered) {
    if (const CUptiResult rc = c.register_callbacks(buffer_requested, buffer_completed); rc != CUPTI_SUCCESS) {
      why_not = "cuptiActivityRegisterCallbacks failed: " + c.result(rc) +
                " (another profiler such as Nsight Systems may be attached)";
      return false;
    }
    g_callbacks_registered = true;
  }
  for (CUpti_ActivityKind k : kKinds) {
    const CUptiResult rc = c.enable(k);
    (void)c.disable(k);
    if (rc != CUPTI_SUCCESS) {
      why_not = std::string("CUPTI refused to record ") + kind_name(k) + ": cuptiActivityEnable returned " +
                c.result(rc) + " (the node may restrict profiling, or another profiler is attached)";
      return false;
    }
  }
  return true;
}

}  // namespace

std::unique_ptr<KernelTrace> make_cupti_kernel_trace(std::string& why_not) {
  const Cupti& c = cupti();
  if (!c.why_not.empty()) {
    why_not = c.why_not;
    return nullptr;
  }
  auto trace = std::make_unique<CuptiKernelTrace>(c);
  {
    std::lock_guard lk(g_mu);
    if (g_active) {
      why_not =
          "a CUPTI kernel trace of this process exists already (CUPTI's activity callbacks serve one at "
          "a time)";
      return nullptr;
    }
    g_active = trace.get();
  }
  if (!probe_kinds(c, why_not)) return nullptr;
  return trace;
}

}  // namespace scaletrain::cuda
