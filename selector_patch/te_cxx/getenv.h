// `transformer_engine::getenv<T>`, for trees that declare it but do not define it: TE 1.9 - 2.1
// declare it in `util/system.h` and define it in `util/system.cpp`, which the trees do not hold.
// This is its definition as TE 2.2+ write it in `util/system.h`, over the call's environment.

namespace transformer_engine {

template <typename T = std::string>
T getenv(const char *variable, const T &default_value) {
  const char *env = te_attn_guards::environment(variable);
  if (env == nullptr || env[0] == '\0') {
    return default_value;
  }
  if constexpr (std::is_arithmetic<T>::value) {
    T value;
    std::istringstream stream(env);
    stream >> value;
    NVTE_CHECK(stream, "Invalid environment variable value");
    return value;
  } else {
    return env;
  }
}

template <typename T = std::string>
T getenv(const char *variable) {
  return getenv<T>(variable, T());
}

}  // namespace transformer_engine
