// Not the lesson: a C++ tool the waits use (stage.hpp's take_completion,
// hybrid.cpp's clock).
//
// A reference to a callable, as C++26's std::function_ref: a pointer to it
// and a plain function that calls it, nothing copied, nothing allocated.
// The waits take one where they could take a std::function, which is
// built (and, for a callable whose captures outgrow its small buffer,
// allocated) around every call, and a drain is called on every look at
// the CQ. The callable must outlive the call it is passed to: a lambda
// written in the argument list does.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace stage08 {

template <class Signature>
class function_ref;
template <class R, class... Args>
class function_ref<R(Args...)> {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, function_ref> && std::is_invocable_r_v<R, F&, Args...>)
  function_ref(F&& f) noexcept  // implicit: a lambda converts, as to std::function
      : callable_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* callable, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(callable))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(callable_, std::forward<Args>(args)...); }

 private:
  void* callable_;
  R (*call_)(void*, Args...);
};

}  // namespace stage08
