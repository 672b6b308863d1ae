// CRC-32C with runtime dispatch: the CPU instruction where the CPU has it (checked once, at
// load), a slice-by-8 table otherwise. The instruction is enabled per function with a target
// attribute, so the package needs no compiler flags and the file builds for any CPU.
#include "crc32c.h"

#include <string.h>

#define POLY 0x82F63B78u

static uint32_t table[8][256];

static void build_tables(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        for (int t = 1; t < 8; t++) table[t][n] = (table[t - 1][n] >> 8) ^ table[0][table[t - 1][n] & 0xFF];
    }
}

static inline uint64_t load_le64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

uint32_t strata_crc32c_extend_portable(uint32_t crc, const void *data, size_t length) {
    const uint8_t *p = data;
    uint32_t c = ~crc;
    while (length >= 8) {
        uint64_t word = load_le64(p) ^ c;
        c = table[7][word & 0xFF] ^ table[6][(word >> 8) & 0xFF] ^ table[5][(word >> 16) & 0xFF] ^
            table[4][(word >> 24) & 0xFF] ^ table[3][(word >> 32) & 0xFF] ^ table[2][(word >> 40) & 0xFF] ^
            table[1][(word >> 48) & 0xFF] ^ table[0][word >> 56];
        p += 8;
        length -= 8;
    }
    while (length--) c = (c >> 8) ^ table[0][(c ^ *p++) & 0xFF];
    return ~c;
}

#if defined(__x86_64__)
#include <cpuid.h>

__attribute__((target("sse4.2"))) uint32_t strata_crc32c_extend_hardware(uint32_t crc, const void *data, size_t length) {
    const uint8_t *p = data;
    uint64_t c = ~crc;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
        p += 8;
        length -= 8;
    }
    // The tail in 4, 2 and 1 bytes rather than byte by byte: a record's key and value end in
    // tails of up to 7 bytes each, read on every row of a scan.
    uint32_t c32 = (uint32_t)c;
    if (length & 4) {
        uint32_t word;
        memcpy(&word, p, 4);
        c32 = __builtin_ia32_crc32si(c32, word);
        p += 4;
    }
    if (length & 2) {
        uint16_t half;
        memcpy(&half, p, 2);
        c32 = __builtin_ia32_crc32hi(c32, half);
        p += 2;
    }
    if (length & 1) c32 = __builtin_ia32_crc32qi(c32, *p);
    return ~c32;
}

static int detect_hardware(void) {
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & bit_SSE4_2) != 0;
}

#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif

__attribute__((target("crc"))) uint32_t strata_crc32c_extend_hardware(uint32_t crc, const void *data, size_t length) {
    const uint8_t *p = data;
    uint32_t c = ~crc;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_arm_crc32cd(c, word);
        p += 8;
        length -= 8;
    }
    if (length & 4) {
        uint32_t word;
        memcpy(&word, p, 4);
        c = __builtin_arm_crc32cw(c, word);
        p += 4;
    }
    if (length & 2) {
        uint16_t half;
        memcpy(&half, p, 2);
        c = __builtin_arm_crc32ch(c, half);
        p += 2;
    }
    if (length & 1) c = __builtin_arm_crc32cb(c, *p);
    return ~c;
}

static int detect_hardware(void) { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }

#else
// No CRC instruction known here: the "hardware" path is the portable one.
uint32_t strata_crc32c_extend_hardware(uint32_t crc, const void *data, size_t length) {
    return strata_crc32c_extend_portable(crc, data, length);
}

static int detect_hardware(void) { return 0; }
#endif

typedef uint32_t (*crc_function)(uint32_t, const void *, size_t);
static crc_function chosen = strata_crc32c_extend_portable;
static int hardware;

// Runs when the library is loaded, before any Swift code can call in: no lock on the hot path.
__attribute__((constructor)) static void choose(void) {
    build_tables();
    hardware = detect_hardware();
    chosen = hardware ? strata_crc32c_extend_hardware : strata_crc32c_extend_portable;
}

uint32_t strata_crc32c_extend(uint32_t crc, const void *data, size_t length) { return chosen(crc, data, length); }

int strata_crc32c_hardware_available(void) { return hardware; }
