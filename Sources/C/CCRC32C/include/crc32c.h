// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78): the checksum of every
// stored record (RecordFormat.md). The same function as iSCSI, ext4 and LevelDB's crc32c.
#ifndef STRATA_CRC32C_H
#define STRATA_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Extends `crc` (the CRC-32C of the bytes before; 0 for none) with `length` bytes at `data`.
/// CRC(a ‖ b) == strata_crc32c_extend(strata_crc32c_extend(0, a), b). Uses the CPU's CRC
/// instruction when it has one (SSE 4.2 on x86-64, the CRC extension on AArch64).
uint32_t strata_crc32c_extend(uint32_t crc, const void *data, size_t length);

/// The same function without the CPU instruction: table-driven, 8 bytes a step.
uint32_t strata_crc32c_extend_portable(uint32_t crc, const void *data, size_t length);

/// The same function through the CPU instruction; call only when strata_crc32c_hardware_available().
uint32_t strata_crc32c_extend_hardware(uint32_t crc, const void *data, size_t length);

/// Whether this CPU has a CRC-32C instruction that strata_crc32c_extend uses.
int strata_crc32c_hardware_available(void);

#ifdef __cplusplus
}
#endif

#endif
