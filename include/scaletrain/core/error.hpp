// The one error path: scaletrain::Error carries rank, host, source file and line and the failing
// library's own message; ST_CHECK / ST_FAIL raise it. Library-specific checks live beside this
// (check_mpi.hpp, check_hdf5.hpp, check_dnnl.hpp, check_cuda.hpp) and stay on in release builds.
// UserError (ST_USER_CHECK / ST_USER_FAIL) is a mistake in what the user gave (configuration,
// command line, data file): its text is the message alone, since a source line helps no user.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace scaletrain {

class Error : public std::runtime_error {
 public:
  Error(std::string text, std::string message, std::string library, std::string where)
      : std::runtime_error(std::move(text)),
        message_(std::move(message)),
        library_(std::move(library)),
        where_(std::move(where)) {}
  // The message without the rank, source and library prefix (for wrapping it in another).
  const std::string& message() const { return message_; }
  const std::string& library() const { return library_; }
  const std::string& where() const { return where_; }

 private:
  std::string message_;
  std::string library_;
  std::string where_;
};

class UserError : public Error {
 public:
  UserError(std::string message, std::string where = "")
      : Error(message, message, "scaletrain", std::move(where)) {}
};

// Set once MPI is up (before that the rank prints as '?'); the host is read on first use.
void set_error_rank(int rank);
int error_rank();
const std::string& error_host();

// Builds "[rank R on HOST] file:line: LIBRARY: message" and throws Error.
[[noreturn]] void throw_error(const char* file, int line, const char* library, const std::string& message);
// Throws UserError with the message alone (file:line kept in where()).
[[noreturn]] void throw_user_error(const char* file, int line, const std::string& message);

namespace detail {
template <class... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace scaletrain

// ST_CHECK(cond, parts...): throws Error with the concatenated parts when cond is false.
#define ST_CHECK(cond, ...)                                                                        \
  do {                                                                                             \
    if (!(cond)) [[unlikely]]                                                                      \
      ::scaletrain::throw_error(__FILE__, __LINE__, "scaletrain", ::scaletrain::detail::concat(__VA_ARGS__)); \
  } while (0)

#define ST_FAIL(...) ::scaletrain::throw_error(__FILE__, __LINE__, "scaletrain", ::scaletrain::detail::concat(__VA_ARGS__))

// ST_USER_CHECK / ST_USER_FAIL: the user's mistake (UserError): the message is all that is printed.
#define ST_USER_CHECK(cond, ...)                                                                   \
  do {                                                                                             \
    if (!(cond)) [[unlikely]]                                                                      \
      ::scaletrain::throw_user_error(__FILE__, __LINE__, ::scaletrain::detail::concat(__VA_ARGS__)); \
  } while (0)

#define ST_USER_FAIL(...) ::scaletrain::throw_user_error(__FILE__, __LINE__, ::scaletrain::detail::concat(__VA_ARGS__))
