// Byte-to-byte lookup over an array: y[i] = table[x[i]], the form of every requantizing
// unary int8 operator (QLinearClamp, QLinearConcat's inputs) once its 256 outputs are
// computed by the scalar arithmetic. Vectorised at AVX2 (under the ISA cap); the bytes are
// the table's whatever the path.
#ifndef QFUSE_RUNTIME_INT8_BYTE_TABLE_H_
#define QFUSE_RUNTIME_INT8_BYTE_TABLE_H_

#include <array>
#include <cstdint>

namespace qfuse::runtime::int8 {

// Raw input byte -> output byte.
using ByteTable = std::array<uint8_t, 256>;

void LookupBytes(const ByteTable& table, const uint8_t* x, int64_t n, uint8_t* y);

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_BYTE_TABLE_H_
