// Float buffer element types, included first by every shader that reads or writes floats.
// STORAGE_FP16 (the second SPIR-V of each shader, see BUILD): float buffers hold float16_t; every
// load widens to fp32 and all arithmetic and accumulation stay fp32; only stores round to fp16.
#ifdef STORAGE_FP16
#extension GL_EXT_shader_16bit_storage : require
#define FLOAT_T float16_t
#define FLOAT4_T f16vec4
#else
#define FLOAT_T float
#define FLOAT4_T vec4
#endif
