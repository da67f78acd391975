// TE 2.20+'s query, `nvte_get_fused_attn_backend_v2`, called with the fields of one request.
//
// The query takes an opaque `NVTEFusedAttnConfig` whose attributes are set one by one, each with
// the size the library itself reports for it (`nvte_get_fused_attn_config_attribute`): an
// integer's low bytes (a bool is one byte, an enum four), a real as `float` or `double`. It
// returns the backend and TE's reject message. A request that TE's own rules admit goes on to
// cuDNN's graph support check, graph by graph; the first cuDNN backend call notes that and throws
// (`machine.cpp`). Where the machine assumes each graph's verdict alone, TE's code goes on: a
// later graph's own checks (the backward's frontend `validate`) may still refuse the request,
// TE's answer with its message. TE admits a request only on cuDNN's verdict on its graphs, which
// on the stubs is the assumed one: asked now, or kept in TE's graph cache from an earlier request
// that asked. So there a request TE admits, or whose query ended at the question, reports
// status 2: TE's rules did not decide it, cuDNN would have. Over a real cuDNN nothing is assumed.

extern "C" bool te_attn_guards_cudnn_asked();
extern "C" bool te_attn_guards_cudnn_ever_asked();

extern "C" int te_attn_guards_query(const te_attn_guards::Machine *machine, std::size_t count,
                                    const int *attributes, const int *reals,
                                    const long long *integers, const double *values,
                                    long long *backend, char *message,
                                    std::size_t message_size, char *log, std::size_t log_size,
                                    char *error, std::size_t error_size) {
  const te_attn_guards::Call call(machine);
  te_attn_guards::log.str("");
  te_attn_guards::log.clear();
  message[0] = '\0';
  int status = 0;
  NVTEFusedAttnConfig config = nullptr;
  try {
    config = nvte_create_fused_attn_config();
    for (std::size_t i = 0; i < count; ++i) {
      const auto attribute = static_cast<NVTEFusedAttnConfigAttribute>(attributes[i]);
      unsigned char buffer[16] = {};
      std::size_t size = 0;
      nvte_get_fused_attn_config_attribute(config, attribute, buffer, sizeof buffer, &size);
      if (reals[i] && size == sizeof(float)) {
        const float real = static_cast<float>(values[i]);
        std::memcpy(buffer, &real, size);
      } else if (reals[i]) {
        std::memcpy(buffer, &values[i], size);
      } else {
        std::memcpy(buffer, &integers[i], size);  // little-endian: the low bytes
      }
      nvte_set_fused_attn_config_attribute(config, attribute, buffer, size);
    }
    const char *said = nullptr;
    *backend = static_cast<long long>(nvte_get_fused_attn_backend_v2(config, &said));
    std::snprintf(message, message_size, "%s", said != nullptr ? said : "");
  } catch (const std::exception &failure) {
    status = 1;
    std::snprintf(error, error_size, "%s", failure.what());
  }
  if (config != nullptr) nvte_destroy_fused_attn_config(config);
  const bool admitted = status == 0 && *backend != NVTE_No_Backend;
  if (status == 1 ? te_attn_guards_cudnn_asked() : admitted && te_attn_guards_cudnn_ever_asked()) {
    status = 2;
  }
  std::snprintf(log, log_size, "%s", te_attn_guards::log.str().c_str());
  return status;
}
