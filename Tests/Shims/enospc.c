// An LD_PRELOAD shim that makes one directory behave as a small, full-able disk, for the
// disk-full test on machines without user namespaces (where a private tmpfs cannot be mounted).
//
//   STRATA_ENOSPC_DIR    the directory (absolute, symlinks resolved) whose files share the space
//   STRATA_ENOSPC_LIMIT  its size in bytes
//
// Every call that can make a file under the directory longer (write, pwrite, writev, pwritev,
// ftruncate, fallocate) is checked against the space left: the sum of the sizes of all files
// under the directory. A call that would cross the limit writes what still fits (a short write,
// as a real full disk gives) or fails with ENOSPC. statvfs/fstatvfs report the space left, which
// LMDB's full-disk detection reads. Deleting a file gives its space back. Files elsewhere are
// not touched. Compiled by the test with the C compiler on PATH.
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static char root[PATH_MAX];
static size_t root_length;
static long long limit = -1;

static void setup(void) {
    if (limit >= 0) return;
    const char *dir = getenv("STRATA_ENOSPC_DIR"), *size = getenv("STRATA_ENOSPC_LIMIT");
    if (!dir || !size) { limit = LLONG_MAX; return; }
    snprintf(root, sizeof root, "%s", dir);
    root_length = strlen(root);
    limit = atoll(size);
}

static int under_root(const char *path) {
    return root_length > 0 && strncmp(path, root, root_length) == 0 && (path[root_length] == '/' || path[root_length] == 0);
}

static int fd_is_limited(int fd) {
    setup();
    if (root_length == 0) return 0;
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0) return 0;
    target[n] = 0;
    return under_root(target);
}

static long long used_under(const char *dir) {
    long long total = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *entry;
    while ((entry = readdir(d))) {
        if (!strcmp(entry->d_name, ".") || !strcmp(entry->d_name, "..")) continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, entry->d_name);
        struct stat st;
        if (lstat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) total += used_under(path);
        else if (S_ISREG(st.st_mode)) total += st.st_size;
    }
    closedir(d);
    return total;
}

static long long space_left(void) {
    long long left = limit - used_under(root);
    return left > 0 ? left : 0;
}

/// How many of `count` bytes written at `offset` of `fd` fit; -1 with ENOSPC when none do.
static ssize_t fitting(int fd, off_t offset, size_t count) {
    struct stat st;
    if (fstat(fd, &st) != 0) return (ssize_t)count;
    long long end = (long long)offset + (long long)count;
    long long growth = end - st.st_size;
    if (growth <= 0) return (ssize_t)count;
    long long left = space_left();
    if (growth <= left) return (ssize_t)count;
    long long fits = (long long)count - (growth - left);
    if (fits <= 0) { errno = ENOSPC; return -1; }
    return (ssize_t)fits;
}

#define REAL(name) static __typeof__(name) *real_##name; if (!real_##name) real_##name = dlsym(RTLD_NEXT, #name)

static off_t current_offset(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0 && (flags & O_APPEND)) { struct stat st; return fstat(fd, &st) == 0 ? st.st_size : 0; }
    return lseek(fd, 0, SEEK_CUR);
}

ssize_t write(int fd, const void *buffer, size_t count) {
    REAL(write);
    if (!fd_is_limited(fd)) return real_write(fd, buffer, count);
    pthread_mutex_lock(&lock);
    ssize_t fits = fitting(fd, current_offset(fd), count);
    ssize_t result = fits < 0 ? -1 : real_write(fd, buffer, (size_t)fits);
    pthread_mutex_unlock(&lock);
    return result;
}

#define PWRITE(name, offset_type)                                                          \
    ssize_t name(int fd, const void *buffer, size_t count, offset_type offset) {           \
        REAL(name);                                                                        \
        if (!fd_is_limited(fd)) return real_##name(fd, buffer, count, offset);             \
        pthread_mutex_lock(&lock);                                                         \
        ssize_t fits = fitting(fd, (off_t)offset, count);                                  \
        ssize_t result = fits < 0 ? -1 : real_##name(fd, buffer, (size_t)fits, offset);    \
        pthread_mutex_unlock(&lock);                                                       \
        return result;                                                                     \
    }
PWRITE(pwrite, off_t)
PWRITE(pwrite64, off64_t)

static size_t total_length(const struct iovec *iov, int count) {
    size_t total = 0;
    for (int i = 0; i < count; i++) total += iov[i].iov_len;
    return total;
}

/// Writes what fits of a vector write by plain writes of its parts (at `offset`, or at the
/// file offset when `offset` is -1), so a full disk cuts it where a real one would.
static ssize_t vector_write(int fd, const struct iovec *iov, int count, off_t offset) {
    REAL(write);
    REAL(pwrite);
    ssize_t fits = fitting(fd, offset >= 0 ? offset : current_offset(fd), total_length(iov, count));
    if (fits < 0) return -1;
    ssize_t done = 0;
    for (int i = 0; i < count && done < fits; i++) {
        size_t part = iov[i].iov_len;
        if ((ssize_t)part > fits - done) part = (size_t)(fits - done);
        ssize_t n = offset >= 0 ? real_pwrite(fd, iov[i].iov_base, part, offset + done) : real_write(fd, iov[i].iov_base, part);
        if (n < 0) return done > 0 ? done : -1;
        done += n;
        if ((size_t)n < part) break;
    }
    return done;
}

ssize_t writev(int fd, const struct iovec *iov, int count) {
    REAL(writev);
    if (!fd_is_limited(fd)) return real_writev(fd, iov, count);
    pthread_mutex_lock(&lock);
    ssize_t result = vector_write(fd, iov, count, -1);
    pthread_mutex_unlock(&lock);
    return result;
}

#define PWRITEV(name, offset_type)                                                         \
    ssize_t name(int fd, const struct iovec *iov, int count, offset_type offset) {         \
        REAL(name);                                                                        \
        if (!fd_is_limited(fd)) return real_##name(fd, iov, count, offset);                \
        pthread_mutex_lock(&lock);                                                         \
        ssize_t result = vector_write(fd, iov, count, (off_t)offset);                      \
        pthread_mutex_unlock(&lock);                                                       \
        return result;                                                                     \
    }
PWRITEV(pwritev, off_t)
PWRITEV(pwritev64, off64_t)

#define TRUNCATE(name, offset_type)                                                        \
    int name(int fd, offset_type length) {                                                 \
        REAL(name);                                                                        \
        if (!fd_is_limited(fd)) return real_##name(fd, length);                            \
        pthread_mutex_lock(&lock);                                                         \
        struct stat st;                                                                    \
        int result;                                                                        \
        if (fstat(fd, &st) == 0 && (long long)length - st.st_size > space_left()) {       \
            errno = ENOSPC;                                                                \
            result = -1;                                                                   \
        } else {                                                                           \
            result = real_##name(fd, length);                                              \
        }                                                                                  \
        pthread_mutex_unlock(&lock);                                                       \
        return result;                                                                     \
    }
TRUNCATE(ftruncate, off_t)
TRUNCATE(ftruncate64, off64_t)

#define ALLOCATE(name, offset_type)                                                        \
    int name(int fd, int mode, offset_type offset, offset_type length) {                   \
        REAL(name);                                                                        \
        if (!fd_is_limited(fd)) return real_##name(fd, mode, offset, length);              \
        pthread_mutex_lock(&lock);                                                         \
        struct stat st;                                                                    \
        int result;                                                                        \
        if (fstat(fd, &st) == 0 && (long long)(offset + length) - st.st_size > space_left()) { \
            errno = ENOSPC;                                                                \
            result = -1;                                                                   \
        } else {                                                                           \
            result = real_##name(fd, mode, offset, length);                                \
        }                                                                                  \
        pthread_mutex_unlock(&lock);                                                       \
        return result;                                                                     \
    }
ALLOCATE(fallocate, off_t)
ALLOCATE(fallocate64, off64_t)

/// posix_fallocate returns the error instead of setting errno.
int posix_fallocate(int fd, off_t offset, off_t length) {
    REAL(posix_fallocate);
    if (!fd_is_limited(fd)) return real_posix_fallocate(fd, offset, length);
    pthread_mutex_lock(&lock);
    struct stat st;
    int result = (fstat(fd, &st) == 0 && (long long)(offset + length) - st.st_size > space_left())
        ? ENOSPC : real_posix_fallocate(fd, offset, length);
    pthread_mutex_unlock(&lock);
    return result;
}

static void shrink(struct statvfs *s) {
    unsigned long block = s->f_frsize ? s->f_frsize : s->f_bsize;
    if (block == 0) return;
    pthread_mutex_lock(&lock);
    fsblkcnt_t free_blocks = (fsblkcnt_t)(space_left() / (long long)block);
    pthread_mutex_unlock(&lock);
    s->f_bfree = s->f_bavail = free_blocks;
    s->f_blocks = (fsblkcnt_t)(limit / (long long)block);
}

int statvfs(const char *path, struct statvfs *s) {
    REAL(statvfs);
    int rc = real_statvfs(path, s);
    setup();
    char resolved[PATH_MAX];
    if (rc == 0 && realpath(path, resolved) && under_root(resolved)) shrink(s);
    return rc;
}

int fstatvfs(int fd, struct statvfs *s) {
    REAL(fstatvfs);
    int rc = real_fstatvfs(fd, s);
    if (rc == 0 && fd_is_limited(fd)) shrink(s);
    return rc;
}
