// An LD_PRELOAD shim that records what a process writes under one directory, and when it syncs,
// so that `strata-harness power-loss-test` can build the disk images a power loss could leave.
//
//   STRATA_POWERLOSS_DIR   the directory (absolute, symlinks resolved) whose files are recorded
//   STRATA_POWERLOSS_LOG   the file the records are appended to
//   STRATA_POWERLOSS_ACKS  a file outside the directory: each write to it is recorded as a marker
//                          (the writer writes "ack N" there after a commit returned)
//   STRATA_POWERLOSS_SKIP_SYNC  if set, fsync and fdatasync of files under the directory (not of the directory) return 0
//                          without syncing or being recorded: an engine that skips its syncs
//                          (proves the harness catches lost commits)
//
// Records are appended after the call returned successfully, under one lock, so their order is
// an order in which the calls completed. Each is a type byte, then fields:
//   'C' path                      a file was created (open with O_CREAT made it)
//   'W' path offset data synced   bytes written at offset (synced: the descriptor has O_SYNC or
//                                 O_DSYNC, so the bytes are on disk when the call returns)
//   'T' path length               the file was truncated or extended to length
//   'S' path                      fsync or fdatasync of the file, or of the directory ("")
//   'R' from to                   rename
//   'U' path                      unlink
//   'A' data                      a marker (a write to the acks file)
// path: u32 length and bytes, relative to the directory; offset, length: u64; data: u32 length
// and bytes; synced: u8. Little-endian. Memory-mapped writes are not recorded: LMDB maps its
// data file read-only, and the files other engines map (SQLite's -shm, LMDB's lock.mdb) are
// rebuilt after a crash. Compiled by the harness with the C compiler on PATH.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FDS 4096

static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static int ready;
static char root[PATH_MAX];
static size_t root_length;
static char acks_path[PATH_MAX];
static int log_fd = -1;
static int skip_sync;
// For each descriptor: its path relative to the directory (NULL if not recorded), whether it is
// the acks file, and whether it writes synchronously.
static char *tracked[MAX_FDS];
static int is_acks[MAX_FDS];
static int is_sync[MAX_FDS];

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_close)(int);
static int (*real_ftruncate)(int, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_unlink)(const char *);
static int (*real_unlinkat)(int, const char *, int);

static void setup(void) {
    if (ready) return;
    real_write = dlsym(RTLD_NEXT, "write");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite64");
    real_writev = dlsym(RTLD_NEXT, "writev");
    real_pwritev = dlsym(RTLD_NEXT, "pwritev64");
    real_open = dlsym(RTLD_NEXT, "open64");
    real_openat = dlsym(RTLD_NEXT, "openat64");
    real_close = dlsym(RTLD_NEXT, "close");
    real_ftruncate = dlsym(RTLD_NEXT, "ftruncate64");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_rename = dlsym(RTLD_NEXT, "rename");
    real_renameat = dlsym(RTLD_NEXT, "renameat");
    real_unlink = dlsym(RTLD_NEXT, "unlink");
    real_unlinkat = dlsym(RTLD_NEXT, "unlinkat");
    const char *dir = getenv("STRATA_POWERLOSS_DIR"), *log = getenv("STRATA_POWERLOSS_LOG"), *acks = getenv("STRATA_POWERLOSS_ACKS");
    skip_sync = getenv("STRATA_POWERLOSS_SKIP_SYNC") != NULL;
    if (dir && log) {
        snprintf(root, sizeof root, "%s", dir);
        root_length = strlen(root);
        if (acks) snprintf(acks_path, sizeof acks_path, "%s", acks);
        log_fd = real_open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
    ready = 1;
}

static void put(const void *bytes, size_t count) {
    const char *p = bytes;
    while (count > 0) {
        ssize_t n = real_write(log_fd, p, count);
        if (n <= 0) { if (n < 0 && errno == EINTR) continue; abort(); }
        p += n;
        count -= (size_t)n;
    }
}
static void put_u8(uint8_t v) { put(&v, 1); }
static void put_u32(uint32_t v) { put(&v, 4); }
static void put_u64(uint64_t v) { put(&v, 8); }
static void put_path(const char *path) { put_u32((uint32_t)strlen(path)); put(path, strlen(path)); }

// The path relative to the directory ("" for the directory itself), or NULL if outside it.
static const char *relative(const char *absolute) {
    if (root_length == 0 || strncmp(absolute, root, root_length) != 0) return NULL;
    const char *rest = absolute + root_length;
    if (*rest == 0) return rest;
    if (*rest == '/') return rest + 1;
    return NULL;
}

// The absolute form of a path given to a call (relative to dirfd or the working directory).
static void absolute(int dirfd, const char *path, char *out) {
    if (path[0] == '/') { snprintf(out, PATH_MAX, "%s", path); return; }
    char base[PATH_MAX];
    if (dirfd == AT_FDCWD) {
        if (!getcwd(base, sizeof base)) base[0] = 0;
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        ssize_t n = readlink(link, base, sizeof base - 1);
        base[n > 0 ? n : 0] = 0;
    }
    snprintf(out, PATH_MAX, "%s/%s", base, path);
}

static void track(int fd, int dirfd, const char *path, int flags, int existed) {
    if (fd < 0 || fd >= MAX_FDS || log_fd < 0) return;
    char full[PATH_MAX];
    absolute(dirfd, path, full);
    pthread_mutex_lock(&lock);
    free(tracked[fd]);
    tracked[fd] = NULL;
    is_acks[fd] = acks_path[0] && strcmp(full, acks_path) == 0;
    const char *rel = relative(full);
    if (rel) {
        tracked[fd] = strdup(rel);
        is_sync[fd] = (flags & (O_SYNC | O_DSYNC)) != 0;
        if ((flags & O_CREAT) && !existed) { put_u8('C'); put_path(rel); }
        if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY) { put_u8('T'); put_path(rel); put_u64(0); }
    }
    pthread_mutex_unlock(&lock);
}

static int exists(int dirfd, const char *path) {
    struct stat st;
    return fstatat(dirfd, path, &st, 0) == 0;
}

static int open_common(int dirfd, const char *path, int flags, mode_t mode) {
    setup();
    int existed = (flags & O_CREAT) ? exists(dirfd, path) : 1;
    int fd = real_openat(dirfd, path, flags, mode);
    if (fd >= 0) track(fd, dirfd, path, flags, existed);
    return fd;
}

int open(const char *path, int flags, ...) {
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, mode_t); va_end(ap); }
    return open_common(AT_FDCWD, path, flags, mode);
}
int open64(const char *path, int flags, ...) {
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, mode_t); va_end(ap); }
    return open_common(AT_FDCWD, path, flags, mode);
}
int openat(int dirfd, const char *path, int flags, ...) {
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, mode_t); va_end(ap); }
    return open_common(dirfd, path, flags, mode);
}
int openat64(int dirfd, const char *path, int flags, ...) {
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, mode_t); va_end(ap); }
    return open_common(dirfd, path, flags, mode);
}
int creat(const char *path, mode_t mode) { return open_common(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode); }
int creat64(const char *path, mode_t mode) { return open_common(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode); }

int close(int fd) {
    setup();
    if (fd >= 0 && fd < MAX_FDS) {
        pthread_mutex_lock(&lock);
        free(tracked[fd]);
        tracked[fd] = NULL;
        is_acks[fd] = 0;
        pthread_mutex_unlock(&lock);
    }
    return real_close(fd);
}

// Records `count` bytes written at `offset` from the pieces of `iov`.
static void record_write(int fd, const struct iovec *iov, int pieces, ssize_t count, off_t offset) {
    if (count <= 0 || fd < 0 || fd >= MAX_FDS || (!tracked[fd] && !is_acks[fd])) return;
    if (is_acks[fd]) { put_u8('A'); } else { put_u8('W'); put_path(tracked[fd]); put_u64((uint64_t)offset); }
    put_u32((uint32_t)count);
    size_t left = (size_t)count;
    for (int i = 0; i < pieces && left > 0; i++) {
        size_t n = iov[i].iov_len < left ? iov[i].iov_len : left;
        put(iov[i].iov_base, n);
        left -= n;
    }
    if (!is_acks[fd]) put_u8((uint8_t)is_sync[fd]);
}

// write and writev at the file position: the position is read under the lock, before the call.
static ssize_t positioned(int fd, const struct iovec *iov, int pieces, ssize_t (*call)(int, const struct iovec *, int)) {
    setup();
    if (fd < 0 || fd >= MAX_FDS || (!tracked[fd] && !is_acks[fd])) return call(fd, iov, pieces);
    pthread_mutex_lock(&lock);
    int append = fcntl(fd, F_GETFL) & O_APPEND;
    struct stat st;
    off_t offset = append ? (fstat(fd, &st) == 0 ? st.st_size : 0) : lseek(fd, 0, SEEK_CUR);
    ssize_t n = call(fd, iov, pieces);
    record_write(fd, iov, pieces, n, offset);
    pthread_mutex_unlock(&lock);
    return n;
}

static ssize_t one_write(int fd, const struct iovec *iov, int pieces) { (void)pieces; return real_write(fd, iov[0].iov_base, iov[0].iov_len); }

ssize_t write(int fd, const void *buf, size_t count) {
    struct iovec iov = { (void *)buf, count };
    return positioned(fd, &iov, 1, one_write);
}
ssize_t writev(int fd, const struct iovec *iov, int pieces) { return positioned(fd, iov, pieces, real_writev); }

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    setup();
    ssize_t n = real_pwrite(fd, buf, count, offset);
    if (n > 0 && fd >= 0 && fd < MAX_FDS && tracked[fd]) {
        struct iovec iov = { (void *)buf, count };
        pthread_mutex_lock(&lock);
        record_write(fd, &iov, 1, n, offset);
        pthread_mutex_unlock(&lock);
    }
    return n;
}
ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) { return pwrite(fd, buf, count, offset); }
ssize_t pwritev(int fd, const struct iovec *iov, int pieces, off_t offset) {
    setup();
    ssize_t n = real_pwritev(fd, iov, pieces, offset);
    if (n > 0 && fd >= 0 && fd < MAX_FDS && tracked[fd]) {
        pthread_mutex_lock(&lock);
        record_write(fd, iov, pieces, n, offset);
        pthread_mutex_unlock(&lock);
    }
    return n;
}
ssize_t pwritev64(int fd, const struct iovec *iov, int pieces, off_t offset) { return pwritev(fd, iov, pieces, offset); }

int ftruncate(int fd, off_t length) {
    setup();
    int rc = real_ftruncate(fd, length);
    if (rc == 0 && fd >= 0 && fd < MAX_FDS && tracked[fd]) {
        pthread_mutex_lock(&lock);
        put_u8('T'); put_path(tracked[fd]); put_u64((uint64_t)length);
        pthread_mutex_unlock(&lock);
    }
    return rc;
}
int ftruncate64(int fd, off_t length) { return ftruncate(fd, length); }

static int sync_common(int fd, int (*call)(int)) {
    setup();
    int recorded = fd >= 0 && fd < MAX_FDS && tracked[fd];
    if (recorded && skip_sync && tracked[fd][0] != 0) return 0;  // a file's sync, not the directory's
    int rc = call(fd);
    if (rc == 0 && recorded) {
        pthread_mutex_lock(&lock);
        put_u8('S'); put_path(tracked[fd]);
        pthread_mutex_unlock(&lock);
    }
    return rc;
}
int fsync(int fd) { return sync_common(fd, real_fsync); }
int fdatasync(int fd) { return sync_common(fd, real_fdatasync); }

static int rename_common(int olddir, const char *from, int newdir, const char *to) {
    setup();
    char a[PATH_MAX], b[PATH_MAX];
    absolute(olddir, from, a);
    absolute(newdir, to, b);
    int rc = real_renameat(olddir, from, newdir, to);
    const char *ra = relative(a), *rb = relative(b);
    if (rc == 0 && ra && rb && log_fd >= 0) {
        pthread_mutex_lock(&lock);
        put_u8('R'); put_path(ra); put_path(rb);
        pthread_mutex_unlock(&lock);
    }
    return rc;
}
int rename(const char *from, const char *to) { return rename_common(AT_FDCWD, from, AT_FDCWD, to); }
int renameat(int olddir, const char *from, int newdir, const char *to) { return rename_common(olddir, from, newdir, to); }

static int unlink_common(int dirfd, const char *path, int flags) {
    setup();
    char a[PATH_MAX];
    absolute(dirfd, path, a);
    int rc = real_unlinkat(dirfd, path, flags);
    const char *ra = relative(a);
    if (rc == 0 && ra && log_fd >= 0) {
        pthread_mutex_lock(&lock);
        put_u8('U'); put_path(ra);
        pthread_mutex_unlock(&lock);
    }
    return rc;
}
int unlink(const char *path) { return unlink_common(AT_FDCWD, path, 0); }
int unlinkat(int dirfd, const char *path, int flags) { return unlink_common(dirfd, path, flags); }
