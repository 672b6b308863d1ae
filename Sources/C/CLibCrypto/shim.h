// OpenSSL's libcrypto (Debian's libssl-dev): AES-256-GCM, HMAC-SHA256 and HKDF-SHA256 for
// StrataEncryption's record values.
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

// EVP_PKEY_HKDF is NID_hkdf, a macro Swift does not import through another macro.
static inline int strata_evp_pkey_hkdf(void) { return EVP_PKEY_HKDF; }
