// MpiCommunicator: Communicator over a private duplicate of an MPI communicator (MPI_ERRORS_RETURN,
// every call through ST_MPI_CHECK), with MpiRequest for non-blocking all-reduce and user-defined
// MPI operations for bf16/f16 (reduced in float, rounded back).
#include "scaletrain/comm/mpi_communicator.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>

#include "scaletrain/core/check_mpi.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/half.hpp"

namespace scaletrain::comm {
namespace {

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

int checked_int(int64_t n, const char* what) {
  ST_CHECK(n >= 0 && n <= INT_MAX, what, " = ", n, " is outside what one MPI call takes (0 .. ", INT_MAX, ")");
  return static_cast<int>(n);
}

// bf16 / f16 reductions: MPI has no 16-bit float types, so they travel as MPI_UINT16_T and are
// reduced by these user functions in float.
template <class Half, float (*ToFloat)(Half), Half (*FromFloat)(float), ReduceOp Op>
void reduce_half(void* in, void* inout, int* len, MPI_Datatype*) {
  const Half* a = static_cast<const Half*>(in);
  Half* b = static_cast<Half*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = ToFloat(a[i]);
    const float y = ToFloat(b[i]);
    float r = 0;
    if constexpr (Op == ReduceOp::sum) r = x + y;
    if constexpr (Op == ReduceOp::max) r = std::max(x, y);
    if constexpr (Op == ReduceOp::min) r = std::min(x, y);
    b[i] = FromFloat(r);
  }
}

float bf16_in(bf16 h) { return bf16_to_float(h); }
bf16 bf16_out(float f) { return float_to_bf16(f); }
float f16_in(f16 h) { return f16_to_float(h); }
f16 f16_out(float f) { return float_to_f16(f); }

class MpiRequest final : public Request {
 public:
  explicit MpiRequest(MPI_Request r) : request_(r) {}
  ~MpiRequest() override {
    // Never leave MPI writing into a buffer that is about to be reused; errors cannot throw here.
    if (request_ != MPI_REQUEST_NULL && !mpi_finalized()) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }
  bool test() override {
    if (request_ == MPI_REQUEST_NULL) return true;
    int done = 0;
    ST_MPI_CHECK(MPI_Test(&request_, &done, MPI_STATUS_IGNORE));
    return done != 0;
  }
  void wait() override {
    if (request_ == MPI_REQUEST_NULL) return;
    ST_MPI_CHECK(MPI_Wait(&request_, MPI_STATUS_IGNORE));
  }

 private:
  MPI_Request request_;
};

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm parent) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    ST_CHECK(initialized, "make_mpi_communicator: MPI is not initialized (call MPI_Init_thread first)");
    ST_CHECK(parent != MPI_COMM_NULL, "make_mpi_communicator: the communicator is MPI_COMM_NULL");
    ST_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
    ST_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    ST_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    ST_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    MPI_Comm local = MPI_COMM_NULL;
    ST_MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
    ST_MPI_CHECK(MPI_Comm_rank(local, &local_rank_));
    ST_MPI_CHECK(MPI_Comm_size(local, &local_size_));
    ST_MPI_CHECK(MPI_Comm_free(&local));
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    ST_MPI_CHECK(MPI_Get_processor_name(name, &len));
    host_.assign(name, static_cast<size_t>(len));
    int provided = MPI_THREAD_SINGLE;
    ST_MPI_CHECK(MPI_Query_thread(&provided));
    other_threads_ = provided >= MPI_THREAD_SERIALIZED;
    create_half_ops();
  }

  ~MpiCommunicator() override {
    if (mpi_finalized()) return;  // MPI already released everything
    for (auto& row : half_ops_)
      for (MPI_Op& op : row)
        if (op != MPI_OP_NULL) MPI_Op_free(&op);
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  const std::string& host() const override { return host_; }
  std::string name() const override { return "mpi"; }
  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(comm_, exit_code);
    std::abort();  // MPI_Abort does not return; if it did, this process must still end
  }
  bool allows_other_threads() const override { return other_threads_; }
  MPI_Comm mpi_comm() const { return comm_; }

  std::unique_ptr<Request> allreduce_async(void* buf, int64_t count, DType dtype, ReduceOp op) override {
    const int n = checked_int(count, "allreduce count");
    MPI_Request r = MPI_REQUEST_NULL;
    ST_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, buf, n, mpi_type(dtype), mpi_op(dtype, op), comm_, &r));
    return std::make_unique<MpiRequest>(r);
  }

  void allreduce(void* buf, int64_t count, DType dtype, ReduceOp op) override {
    const int n = checked_int(count, "allreduce count");
    ST_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, n, mpi_type(dtype), mpi_op(dtype, op), comm_));
  }

  void broadcast(void* buf, int64_t bytes, int root) override {
    check_root(root, "broadcast");
    ST_MPI_CHECK(MPI_Bcast(buf, checked_int(bytes, "broadcast bytes"), MPI_BYTE, root, comm_));
  }

  void gather(const void* send, int64_t bytes_per_rank, void* recv, int root) override {
    check_root(root, "gather");
    checked_int(bytes_per_rank * size_, "gather total bytes");
    const int n = checked_int(bytes_per_rank, "gather bytes per rank");
    ST_MPI_CHECK(MPI_Gather(send, n, MPI_BYTE, recv, n, MPI_BYTE, root, comm_));
  }

  void allgather(const void* send, int64_t bytes_per_rank, void* recv) override {
    checked_int(bytes_per_rank * size_, "allgather total bytes");
    const int n = checked_int(bytes_per_rank, "allgather bytes per rank");
    ST_MPI_CHECK(MPI_Allgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm_));
  }

  void barrier() override { ST_MPI_CHECK(MPI_Barrier(comm_)); }

 private:
  static int op_index(ReduceOp op) { return static_cast<int>(op); }

  void check_root(int root, const char* what) const {
    ST_CHECK(root >= 0 && root < size_, what, ": root ", root, " is not a rank of this communicator (size ", size_, ")");
  }

  static MPI_Datatype mpi_type(DType t) {
    switch (t) {
      case DType::f32: return MPI_FLOAT;
      case DType::i32: return MPI_INT32_T;
      case DType::i64: return MPI_INT64_T;
      case DType::f64: return MPI_DOUBLE;
      case DType::u8: return MPI_UINT8_T;
      case DType::bf16:
      case DType::f16: return MPI_UINT16_T;
    }
    ST_FAIL("no MPI datatype for dtype ", static_cast<int>(t));
  }

  MPI_Op mpi_op(DType t, ReduceOp op) const {
    ST_CHECK(op != ReduceOp::avg, "the MPI communicator has no average all-reduce: use sum and divide by ", size_);
    if (t == DType::bf16) return half_ops_[0][static_cast<size_t>(op_index(op))];
    if (t == DType::f16) return half_ops_[1][static_cast<size_t>(op_index(op))];
    switch (op) {
      case ReduceOp::sum: return MPI_SUM;
      case ReduceOp::max: return MPI_MAX;
      case ReduceOp::min: return MPI_MIN;
      case ReduceOp::avg: break;
    }
    ST_FAIL("unknown ReduceOp ", static_cast<int>(op));
  }

  void create_half_ops() {
    using Fn = MPI_User_function*;
    const std::array<std::array<Fn, 3>, 2> fns{{
        {reduce_half<bf16, bf16_in, bf16_out, ReduceOp::sum>, reduce_half<bf16, bf16_in, bf16_out, ReduceOp::max>,
         reduce_half<bf16, bf16_in, bf16_out, ReduceOp::min>},
        {reduce_half<f16, f16_in, f16_out, ReduceOp::sum>, reduce_half<f16, f16_in, f16_out, ReduceOp::max>,
         reduce_half<f16, f16_in, f16_out, ReduceOp::min>},
    }};
    for (size_t k = 0; k < 2; ++k)
      for (size_t o = 0; o < 3; ++o) ST_MPI_CHECK(MPI_Op_create(fns[k][o], /*commute=*/1, &half_ops_[k][o]));
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  std::string host_;
  bool other_threads_ = false;
  std::array<std::array<MPI_Op, 3>, 2> half_ops_{{{MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL},
                                                  {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}}};
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm) { return std::make_unique<MpiCommunicator>(comm); }

MPI_Comm mpi_comm_of(const Communicator& comm) {
  const auto* mpi = dynamic_cast<const MpiCommunicator*>(&comm);
  return mpi ? mpi->mpi_comm() : MPI_COMM_NULL;
}

}  // namespace scaletrain::comm
