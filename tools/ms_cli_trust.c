/*  =========================================================================
    ms_cli_trust - meshsweep pool init | invite | join | enroll | revoke |
    clear | publish | show: the pool authority, certificates, enrollment kits,
   revocations

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Identity, pools and admission". Everything here works on
    files, with no daemon and no network:

    - The authority directory (`pool init --out DIR`, mode 0700) holds
      authority.key (the Ed25519 secret, 0600: whoever has it can admit
      nodes, so DIR is meant to live offline), authority.pub (its public
      key in hex), pool.json (pool id, authority key, creation time) and
      serial (the last serial number issued, a decimal counter shared by
      certificates, enrollment keys and revocations, so serials only
      grow). The commands that sign find DIR with --authority DIR, else
      $MESHSWEEP_AUTHORITY, else ./pool-authority.
    - `pool invite` signs a certificate for a node id and writes a bundle
      (ms_cert_bundle_save); `pool join` checks it against the node of a
      data dir, installs it as DIR/identity/node.cert and signals the
      running node (SIGHUP to the holder of DIR/node.lock) or restarts the
      systemd service.
    - Static peers given to `pool join --peer` are written to
      DIR/identity/peers.conf, an INI file of `peer = ID@tcp://HOST:PORT`
      lines in meshsweepd's config syntax. The file sits beside the
      certificate (identity/ survives a wiped store); meshsweepd reads it
      at start and on SIGHUP.
    - `pool revoke` writes a signed revocation item (ms_authority_item).
      `pool publish FILE --node URL` (or `pool revoke --node URL`) hands
      it to a node (POST /api/v1/authority), which gossips it to the pool.
    - `pool clear` writes a signed quarantine clear (same file format and
      publishing) with a cut of the node's log: every node forgives the
      strikes its results inside the cut earned, whatever the order in
      which the clear and the results reach it. The cut is `--cut` or,
      with `--node URL`, that node's view of the log (GET
      /api/v1/logs/NODE_ID: per incarnation the highest seq held).

    A node id must be typed in full here (64 hex): the authority keeps no
    list of nodes against which a prefix could be resolved.
*/
#include "ms_authority_item.h"
#include "ms_cert.h"
#include "ms_cli.h"
#include "ms_peers_conf.h"
#include "ms_wire.h"

#include <ini.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sodium.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define S_DEFAULT_AUTHORITY "pool-authority"
#define S_DEFAULT_EXPIRY_S (365LL * 86400) // certificates and enroll keys
#define S_KEY_HEX (2 * MS_CERT_KEY_BYTES)

//  --------------------------------------------------------------------------
//  Bytes as lowercase hex into out (2n + 1 bytes).

static void
s_hex(const uint8_t *bytes, size_t n, char *out)
{
    sodium_bin2hex(out, 2 * n + 1, bytes, n);
}

//  --------------------------------------------------------------------------
//  A time as an ISO 8601 UTC timestamp, or "never" for 0.

static void
s_iso(int64_t t, char out[32])
{
    if (t == 0) {
        snprintf(out, 32, "never");
        return;
    }
    time_t tt = (time_t) t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

//  --------------------------------------------------------------------------
//  Roles as a comma list ("worker,submit").

static void
s_roles_text(uint32_t roles, char out[64])
{
    out[0] = 0;
    if (roles & MS_CERT_ROLE_WORKER)
        strcat(out, "worker,");
    if (roles & MS_CERT_ROLE_SUBMIT)
        strcat(out, "submit,");
    if (roles & MS_CERT_ROLE_ENROLL)
        strcat(out, "enroll,");
    size_t n = strlen(out);
    if (n)
        out[n - 1] = 0;
}

//  --------------------------------------------------------------------------
//  Parse --roles: a comma list of worker and submit. Exit code.

static int
s_parse_roles(const char *text, uint32_t *roles)
{
    *roles = 0;
    const char *p = text;
    while (*p) {
        size_t n = strcspn(p, ",");
        if (n == 6 && strncmp(p, "worker", 6) == 0)
            *roles |= MS_CERT_ROLE_WORKER;
        else if (n == 6 && strncmp(p, "submit", 6) == 0)
            *roles |= MS_CERT_ROLE_SUBMIT;
        else if (n == 6 && strncmp(p, "enroll", 6) == 0)
            return ms_cli_usage_error("--roles",
                                      "'enroll' is not granted here: use "
                                      "`meshsweep pool enroll` for an "
                                      "enrollment key");
        else
            return ms_cli_usage_error("--roles",
                                      "unknown role '%.*s' (expected worker, "
                                      "submit, or both: worker,submit)",
                                      (int) n, p);
        p += n;
        if (*p == ',')
            p++;
    }
    if (*roles == 0)
        return ms_cli_usage_error("--roles", "no role given (expected "
                                             "worker, submit or both)");
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  Seconds since the epoch of a UTC civil time (timegm is not POSIX; days
//  from the civil date by H. Hinnant's algorithm). Fields are not
//  normalised: the caller checks their ranges.

static int64_t
s_utc_seconds(int y, int mo, int d, int h, int mi, int s)
{
    y -= mo <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = era * 146097 + doe - 719468;
    return days * 86400 + h * 3600 + mi * 60 + s;
}

//  --------------------------------------------------------------------------
//  True when y-mo-d is a real date.

static bool
s_date_ok(int y, int mo, int d)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1)
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return d <= mdays[mo - 1] + (mo == 2 && leap);
}

//  --------------------------------------------------------------------------
//  Parse an expiry: "never", a duration (90d, 12h, 4w, 1y), a date
//  (YYYY-MM-DD: the end of that day, UTC) or a timestamp
//  (YYYY-MM-DDTHH:MM[:SS][Z], UTC). *not_after in s since the epoch, 0
//  for never. Exit code.

static int
s_parse_expiry(const char *text, int64_t now_s, int64_t *not_after)
{
    if (strcmp(text, "never") == 0) {
        *not_after = 0;
        return MS_CLI_EXIT_OK;
    }
    size_t n = strlen(text);
    if (n >= 2 && strspn(text, "0123456789") == n - 1) {
        char unit = text[n - 1];
        long long mult = unit == 'h'   ? 3600
                         : unit == 'd' ? 86400
                         : unit == 'w' ? 7 * 86400
                         : unit == 'y' ? 365 * 86400
                                       : 0;
        errno = 0;
        long long v = strtoll(text, NULL, 10);
        if (mult && !errno && v >= 1 && v <= 100LL * 365 * 86400 / mult) {
            *not_after = now_s + v * mult;
            return MS_CLI_EXIT_OK;
        }
        if (mult)
            return ms_cli_usage_error(
                "--expires", "'%s': a duration of 1 to 100 years", text);
    }
    int y = 0, mo = 0, d = 0, h = 23, mi = 59, s = 59, used = 0;
    bool ok = false;
    if (sscanf(text, "%4d-%2d-%2d%n", &y, &mo, &d, &used) == 3 && used == 10 &&
        (size_t) used == n)
        ok = true;
    else if (used == 10 && (text[10] == 'T' || text[10] == ' ')) {
        int used2 = 0;
        s = 0;
        const char *t = text + 11;
        if (sscanf(t, "%2d:%2d:%2d%n", &h, &mi, &s, &used2) == 3 && used2 == 8)
            t += 8;
        else if (sscanf(t, "%2d:%2d%n", &h, &mi, &used2) == 2 && used2 == 5)
            t += 5, s = 0;
        else
            t = NULL;
        if (t && *t == 'Z')
            t++;
        ok = t && *t == 0;
    }
    if (ok) {
        ok = s_date_ok(y, mo, d) && h >= 0 && h <= 23 && mi >= 0 && mi <= 59 &&
             s >= 0 && s <= 59;
        if (ok) {
            int64_t t = s_utc_seconds(y, mo, d, h, mi, s);
            if (t <= now_s)
                return ms_cli_usage_error("--expires", "'%s' is in the past",
                                          text);
            *not_after = t;
            return MS_CLI_EXIT_OK;
        }
    }
    return ms_cli_usage_error(
        "--expires",
        "'%s' is not a date: expected YYYY-MM-DD (end of that day, UTC), "
        "YYYY-MM-DDTHH:MM:SSZ, a duration (90d, 12h, 4w, 1y) or never",
        text);
}

//  --------------------------------------------------------------------------
//  Parse a node id typed by the user: 64 hex characters. Exit code.

static int
s_parse_node_id(const char *text, uint8_t pk[MS_CERT_KEY_BYTES])
{
    size_t n = strlen(text);
    bool hex = n > 0 && strspn(text, "0123456789abcdefABCDEF") == n;
    if (hex && n >= 12 && n < S_KEY_HEX)
        return ms_cli_usage_error(
            text,
            "a node id prefix cannot be resolved here (the authority keeps "
            "no list of nodes): give the whole node id, 64 hex characters "
            "(meshsweepd prints it at start; DATA_DIR/identity/node.pub "
            "holds it)");
    size_t got = 0;
    if (!hex || n != S_KEY_HEX ||
        sodium_hex2bin(pk, MS_CERT_KEY_BYTES, text, n, NULL, &got, NULL) != 0 ||
        got != MS_CERT_KEY_BYTES)
        return ms_cli_usage_error(
            text,
            "not a node id (expected 64 hex characters, got %zu "
            "characters%s)",
            n, hex ? "" : " with non-hex ones");
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  Write a small file atomically (temporary file, fsync, rename) with
//  exactly this mode. Exit code; prints the error line.

static int
s_write_file(const char *path, const char *text, mode_t mode)
{
    char tmp[PATH_MAX + 8];
    if ((size_t) snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return ms_cli_usage_error(path, "path too long");
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return ms_cli_failure(tmp, "cannot create: %s", strerror(errno));
    size_t n = strlen(text);
    bool ok = fchmod(fd, mode) == 0 && write(fd, text, n) == (ssize_t) n &&
              fsync(fd) == 0;
    int err = errno;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        if (ok)
            err = errno;
        unlink(tmp);
        return ms_cli_failure(path, "cannot write: %s", strerror(err));
    }
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  Join dir and name into out (PATH_MAX). Exit code.

static int
s_path(char out[PATH_MAX], const char *dir, const char *name)
{
    if ((size_t) snprintf(out, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX)
        return ms_cli_usage_error(dir, "path too long");
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  The authority directory: the option, else $MESHSWEEP_AUTHORITY, else
//  ./pool-authority.

static const char *
s_authority_dir(const char *option)
{
    if (option && *option)
        return option;
    const char *env = getenv("MESHSWEEP_AUTHORITY");
    return env && *env ? env : S_DEFAULT_AUTHORITY;
}

//  The authority's keys, loaded from its directory.
typedef struct {
    uint8_t *sk;                            // sodium_malloc'd, 64 bytes
    uint8_t pk[MS_CERT_KEY_BYTES];          // public key
    uint8_t pool_id[MS_CERT_POOL_ID_BYTES]; // H(pk)
    const char *dir;                        // borrowed
} s_authority_t;

//  --------------------------------------------------------------------------
//  Free an authority's secret.

static void
s_authority_close(s_authority_t *a)
{
    if (a->sk)
        sodium_free(a->sk);
    a->sk = NULL;
}

//  --------------------------------------------------------------------------
//  Load the authority key from dir. Exit code; prints the error line.

static int
s_authority_open(s_authority_t *a, const char *dir)
{
    memset(a, 0, sizeof *a);
    a->dir = dir;
    if (sodium_init() < 0)
        return ms_cli_failure("libsodium", "cannot initialise");
    char path[PATH_MAX];
    int code = s_path(path, dir, "authority.key");
    if (code != MS_CLI_EXIT_OK)
        return code;
    a->sk = sodium_malloc(MS_CERT_SECRET_BYTES);
    if (!a->sk)
        return ms_cli_failure(dir, "out of memory");
    ms_diag_t d;
    ms_diag_clear(&d);
    int rc = ms_cert_secret_load(path, a->sk, &d);
    if (rc == MS_ERR_NOTFOUND) {
        s_authority_close(a);
        return ms_cli_usage_error(
            path, "no pool authority here (make one with `meshsweep pool init "
                  "--out DIR`, or point at it with --authority DIR or "
                  "$MESHSWEEP_AUTHORITY)");
    }
    if (rc != MS_OK) {
        s_authority_close(a);
        return ms_cli_diag_exit(&d, rc, path);
    }
    crypto_sign_ed25519_sk_to_pk(a->pk, a->sk);
    ms_cert_pool_id(a->pk, a->pool_id);
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  A serial number taken from DIR/serial and not yet known to be used: the
//  counter already holds it (written and fsynced) and stays locked until
//  s_serial_done, which gives it back when nothing was issued under it.
//  Bumping before the item is written, and giving back under the same
//  lock, means no two items ever share a serial: a crash in between skips
//  one, which is harmless.
typedef struct {
    int fd;              // the locked counter file, -1 when none
    uint64_t last;       // the value before this serial
    char path[PATH_MAX]; // DIR/serial
} s_serial_t;

//  Write value to the counter file (truncate, write, fsync). errno on
//  failure.
static bool
s_serial_write(int fd, uint64_t value)
{
    char text[32];
    int len = snprintf(text, sizeof text, "%llu\n", (unsigned long long) value);
    return ftruncate(fd, 0) == 0 && pwrite(fd, text, (size_t) len, 0) == len &&
           fsync(fd) == 0;
}

//  --------------------------------------------------------------------------
//  Take the next serial number from DIR/serial (locked until
//  s_serial_done, so two commands at once never share one). Exit code;
//  on failure nothing is held and the counter is unchanged.

static int
s_serial_take(const s_authority_t *a, s_serial_t *s, uint64_t *serial)
{
    s->fd = -1;
    int code = s_path(s->path, a->dir, "serial");
    if (code != MS_CLI_EXIT_OK)
        return code;
    int fd = open(s->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return ms_cli_failure(s->path, "cannot open: %s", strerror(errno));
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(fd, F_SETLKW, &fl) != 0) {
        close(fd);
        return ms_cli_failure(s->path, "cannot lock: %s", strerror(errno));
    }
    char text[32] = {0};
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    uint64_t last = 0;
    if (n > 0) {
        char *end = NULL;
        errno = 0;
        unsigned long long v = strtoull(text, &end, 10);
        if (errno || end == text || (*end && *end != '\n')) {
            close(fd);
            return ms_cli_failure(s->path, "not a serial number counter; fix "
                                           "or remove it");
        }
        last = v;
    }
    if (!s_serial_write(fd, last + 1)) {
        int err = errno;
        if (n > 0 && !s_serial_write(fd, last))
            fprintf(stderr, "meshsweep: %s: warning: could not restore %llu\n",
                    s->path, (unsigned long long) last);
        close(fd);
        return ms_cli_failure(s->path, "cannot write: %s", strerror(err));
    }
    s->fd = fd;
    s->last = last;
    *serial = last + 1;
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  Release a serial taken by s_serial_take: USED when an item carrying it
//  was written, else the counter goes back to its value before (still
//  under the lock, so nobody took the next one meanwhile). Idempotent.

static void
s_serial_done(s_serial_t *s, bool used)
{
    if (s->fd < 0)
        return;
    if (!used && !s_serial_write(s->fd, s->last))
        fprintf(stderr,
                "meshsweep: %s: warning: serial %llu skipped (cannot give "
                "it back: %s)\n",
                s->path, (unsigned long long) s->last + 1, strerror(errno));
    close(s->fd); // releases the lock
    s->fd = -1;
}

//  ---- pool init ---------------------------------------------------------

//  --------------------------------------------------------------------------
//  Help for meshsweep pool init.

static void
s_init_usage(FILE *out)
{
    fprintf(out,
            "usage: meshsweep pool init [--out DIR] [--json]\n"
            "\n"
            "Make a pool authority: a new Ed25519 key pair in DIR (created "
            "0700;\ndefault $MESHSWEEP_AUTHORITY or ./" S_DEFAULT_AUTHORITY
            "): authority.key (the\nsecret, 0600), authority.pub, pool.json "
            "(the pool id). Prints the pool\nid and the authority key. An "
            "existing non-empty DIR is refused.\n"
            "\n"
            "Keep DIR offline (a USB stick, an offline machine): whoever has\n"
            "authority.key can admit nodes to the pool and revoke them.\n"
            "\n"
            "  --out DIR      where to make the authority\n"
            "  --json         print {pool_id, authority_key, dir} as JSON\n");
}

//  --------------------------------------------------------------------------
//  meshsweep pool init

static int
s_init_main(int argc, char **argv)
{
    if (ms_cli_wants_help(argc, argv))
        return s_init_usage(stdout), MS_CLI_EXIT_OK;
    const char *dir = NULL;
    bool json_out = false;
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v = NULL;
        if (ms_cli_arg_value(argc, argv, &i, "--out", &v, &missing)) {
            if (missing || !*v)
                return ms_cli_usage_error("--out", "needs a directory");
            dir = v;
        } else if (strcmp(argv[i], "--json") == 0)
            json_out = true;
        else
            return ms_cli_usage_error(argv[i], "unknown argument of pool init");
    }
    dir = s_authority_dir(dir);
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return ms_cli_usage_error(dir, "exists and is not a directory");
        DIR *dh = opendir(dir);
        if (!dh)
            return ms_cli_failure(dir, "cannot read: %s", strerror(errno));
        struct dirent *e;
        bool empty = true;
        while ((e = readdir(dh)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                empty = false;
        closedir(dh);
        if (!empty)
            return ms_cli_usage_error(dir, "exists and is not empty; a pool "
                                           "authority is never overwritten "
                                           "(choose another --out)");
        if (chmod(dir, 0700) != 0)
            return ms_cli_failure(dir, "chmod: %s", strerror(errno));
    } else if (mkdir(dir, 0700) != 0)
        return ms_cli_failure(dir, "cannot create: %s", strerror(errno));
    if (chmod(dir, 0700) != 0)
        return ms_cli_failure(dir, "chmod: %s", strerror(errno));

    uint8_t pk[MS_CERT_KEY_BYTES];
    uint8_t *sk =
        sodium_init() >= 0 ? sodium_malloc(MS_CERT_SECRET_BYTES) : NULL;
    if (!sk || ms_cert_keypair(pk, sk) != MS_OK) {
        if (sk)
            sodium_free(sk);
        return ms_cli_failure("libsodium", "cannot make a key pair");
    }
    char path[PATH_MAX];
    int code = s_path(path, dir, "authority.key");
    if (code != MS_CLI_EXIT_OK) {
        sodium_free(sk);
        return code;
    }
    ms_diag_t d;
    ms_diag_clear(&d);
    int rc = ms_cert_secret_save(path, sk, &d);
    sodium_free(sk);
    if (rc != MS_OK)
        return ms_cli_diag_exit(&d, rc, path);

    uint8_t pool_id[MS_CERT_POOL_ID_BYTES];
    ms_cert_pool_id(pk, pool_id);
    char pk_hex[S_KEY_HEX + 1], id_hex[2 * MS_CERT_POOL_ID_BYTES + 1];
    s_hex(pk, sizeof pk, pk_hex);
    s_hex(pool_id, sizeof pool_id, id_hex);
    char created[32], text[512];
    s_iso((int64_t) time(NULL), created);
    snprintf(text, sizeof text, "%s\n", pk_hex);
    if ((code = s_path(path, dir, "authority.pub")) != MS_CLI_EXIT_OK ||
        (code = s_write_file(path, text, 0644)) != MS_CLI_EXIT_OK)
        return code;
    snprintf(text, sizeof text,
             "{\n  \"pool_id\": \"%s\",\n  \"authority_key\": \"%s\",\n"
             "  \"created_at\": \"%s\"\n}\n",
             id_hex, pk_hex, created);
    if ((code = s_path(path, dir, "pool.json")) != MS_CLI_EXIT_OK ||
        (code = s_write_file(path, text, 0644)) != MS_CLI_EXIT_OK)
        return code;

    if (json_out) {
        json_t *doc = json_pack("{s:s, s:s, s:s}", "pool_id", id_hex,
                                "authority_key", pk_hex, "dir", dir);
        code = doc ? ms_cli_json_print(stdout, doc)
                   : ms_cli_failure(dir, "out of memory");
        json_decref(doc);
        return code;
    }
    printf("pool id        %s\n"
           "authority key  %s\n"
           "\n"
           "The pool authority is in %s (authority.key, mode 0600).\n"
           "Keep that directory offline: whoever has authority.key can "
           "admit nodes.\n"
           "Next: meshsweep pool invite NODE_ID --operator NAME "
           "--authority %s\n",
           id_hex, pk_hex, dir, dir);
    return MS_CLI_EXIT_OK;
}

//  ---- pool invite -------------------------------------------------------

//  --------------------------------------------------------------------------
//  Help for meshsweep pool invite.

static void
s_invite_usage(FILE *out)
{
    fprintf(out,
            "usage: meshsweep pool invite NODE_ID --operator NAME "
            "[--roles worker,submit]\n"
            "           [--max-workers N] [--expires DATE] [--authority DIR] "
            "[--out FILE]\n"
            "           [--json]\n"
            "\n"
            "Sign a membership certificate for the node NODE_ID (its whole "
            "id, 64 hex\ncharacters: meshsweepd prints it at start, and "
            "DATA_DIR/identity/node.pub\nholds it; a prefix cannot be "
            "resolved here) and write it as a certificate\nfile for `meshsweep "
            "pool join`.\n"
            "\n"
            "  --operator NAME    the person or group behind the node (1..64 "
            "bytes);\n"
            "                     quorums count operators, not nodes\n"
            "  --roles LIST       worker, submit, or worker,submit (default "
            "worker;\n"
            "                     submit must be asked for)\n"
            "  --max-workers N    cap on the node's workers (default 0: no "
            "cap)\n"
            "  --expires DATE     YYYY-MM-DD (end of that day, UTC), "
            "YYYY-MM-DDTHH:MM:SSZ,\n"
            "                     a duration (90d, 12h, 4w, 1y) or never "
            "(default 1y)\n"
            "  --authority DIR    the pool authority (default "
            "$MESHSWEEP_AUTHORITY or\n"
            "                     ./" S_DEFAULT_AUTHORITY ")\n"
            "  --out FILE         where to write it (default "
            "NODE_ID12.cert here)\n"
            "  --json             print the certificate's fields as JSON\n");
}

//  --------------------------------------------------------------------------
//  A certificate's fields as JSON (caller decrefs).

static json_t *
s_cert_json(const ms_cert_t *c)
{
    char subject[S_KEY_HEX + 1], issuer[S_KEY_HEX + 1],
        pool[2 * MS_CERT_POOL_ID_BYTES + 1], roles[64], expires[32];
    s_hex(c->subject, MS_CERT_KEY_BYTES, subject);
    s_hex(c->issuer, MS_CERT_KEY_BYTES, issuer);
    s_hex(c->pool_id, MS_CERT_POOL_ID_BYTES, pool);
    s_roles_text(c->roles, roles);
    s_iso(c->not_after, expires);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:I}", "pool_id",
                     pool, "node_id", subject, "operator", c->operator_name,
                     "roles", roles, "expires", expires, "max_workers",
                     (json_int_t) c->max_workers, "issuer", issuer, "serial",
                     (json_int_t) c->serial);
}

//  Options shared by invite and enroll.
typedef struct {
    const char *operator_name; // --operator
    const char *roles;         // --roles
    const char *expires;       // --expires
    const char *authority;     // --authority
    const char *out;           // --out
    const char *max_workers;   // --max-workers (invite)
    bool json_out;             // --json
} s_sign_opts_t;

//  --------------------------------------------------------------------------
//  Take one option of invite/enroll at argv[*i]. Returns -1 when argv[*i]
//  is not one of them, else an exit code.

static int
s_sign_option(int argc, char **argv, int *i, s_sign_opts_t *o, bool invite)
{
    static const char *const names[] = {"--operator", "--roles",
                                        "--expires",  "--authority",
                                        "--out",      "--max-workers"};
    const char **slots[] = {&o->operator_name, &o->roles, &o->expires,
                            &o->authority,     &o->out,   &o->max_workers};
    size_t n_names = invite ? 6 : 5;
    for (size_t k = 0; k < n_names; k++) {
        bool missing = false;
        const char *v = NULL;
        if (ms_cli_arg_value(argc, argv, i, names[k], &v, &missing)) {
            if (missing)
                return ms_cli_usage_error(names[k], "needs a value");
            *slots[k] = v;
            return MS_CLI_EXIT_OK;
        }
    }
    if (strcmp(argv[*i], "--json") == 0) {
        o->json_out = true;
        return MS_CLI_EXIT_OK;
    }
    return -1;
}

//  --------------------------------------------------------------------------
//  Fill and check the common fields of a certificate from the options.
//  Exit code.

static int
s_cert_fields(const s_sign_opts_t *o, ms_cert_t *c)
{
    if (!o->operator_name)
        return ms_cli_usage_error("--operator",
                                  "required: the person or group behind "
                                  "the node (quorums count operators)");
    size_t n = strlen(o->operator_name);
    if (n == 0 || n > MS_CERT_OPERATOR_MAX)
        return ms_cli_usage_error("--operator", "must be 1..%d bytes, not %zu",
                                  MS_CERT_OPERATOR_MAX, n);
    memcpy(c->operator_name, o->operator_name, n + 1);
    int code = s_parse_roles(o->roles ? o->roles : "worker", &c->roles);
    if (code != MS_CLI_EXIT_OK)
        return code;
    int64_t now_s = (int64_t) time(NULL);
    c->not_after = now_s + S_DEFAULT_EXPIRY_S;
    if (o->expires && (code = s_parse_expiry(o->expires, now_s,
                                             &c->not_after)) != MS_CLI_EXIT_OK)
        return code;
    if (o->max_workers) {
        long v = 0;
        if (ms_cli_parse_int("--max-workers", o->max_workers, 0, 1000000, &v) !=
            MS_OK)
            return MS_CLI_EXIT_USAGE;
        c->max_workers = (uint32_t) v;
    }
    ms_diag_t d;
    ms_diag_clear(&d);
    if (ms_cert_check_fields(c, &d) != MS_OK)
        return ms_cli_usage_error("--operator", "%s", d.reason);
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  meshsweep pool invite

static int
s_invite_main(int argc, char **argv)
{
    if (ms_cli_wants_help(argc, argv))
        return s_invite_usage(stdout), MS_CLI_EXIT_OK;
    s_sign_opts_t o = {0};
    const char *node = NULL;
    for (int i = 1; i < argc; i++) {
        int code = s_sign_option(argc, argv, &i, &o, true);
        if (code > 0)
            return code;
        if (code == 0)
            continue;
        if (argv[i][0] == '-' && argv[i][1])
            return ms_cli_usage_error(argv[i], "unknown option of pool invite");
        if (node)
            return ms_cli_usage_error(argv[i], "unexpected argument");
        node = argv[i];
    }
    if (!node)
        return ms_cli_usage_error(
            "pool invite", "missing NODE_ID (meshsweep pool invite --help)");
    ms_cert_t c;
    memset(&c, 0, sizeof c);
    int code = s_parse_node_id(node, c.subject);
    if (code != MS_CLI_EXIT_OK)
        return code;
    if ((code = s_cert_fields(&o, &c)) != MS_CLI_EXIT_OK)
        return code;
    char subject[S_KEY_HEX + 1], out_default[64];
    s_hex(c.subject, MS_CERT_KEY_BYTES, subject);
    snprintf(out_default, sizeof out_default, "%.12s.cert", subject);
    const char *out = o.out ? o.out : out_default;
    ms_diag_t d;
    ms_diag_clear(&d);
    if (access(out, F_OK) == 0) {
        // another node's certificate may be there: never overwrite it
        ms_diag_set(&d, out,
                    "exists already; not overwritten (move it, or "
                    "name another file with --out)");
        return ms_cli_diag_exit(&d, MS_ERR_INVALID, out);
    }
    s_authority_t a;
    if ((code = s_authority_open(&a, s_authority_dir(o.authority))) !=
        MS_CLI_EXIT_OK)
        return code;
    memcpy(c.pool_id, a.pool_id, MS_CERT_POOL_ID_BYTES);
    s_serial_t serial;
    if ((code = s_serial_take(&a, &serial, &c.serial)) != MS_CLI_EXIT_OK) {
        s_authority_close(&a);
        return code;
    }
    int rc = ms_cert_sign(&c, a.sk, &d);
    s_authority_close(&a);
    if (rc != MS_OK) {
        s_serial_done(&serial, false);
        return ms_cli_diag_exit(&d, rc, "certificate");
    }
    ms_cert_chain_t chain = {.leaf = c};
    rc = ms_cert_bundle_save(out, a.pk, &chain, &d);
    s_serial_done(&serial, rc == MS_OK); // a failed write uses no serial
    if (rc != MS_OK)
        return ms_cli_diag_exit(&d, rc, out);
    if (o.json_out) {
        json_t *doc = s_cert_json(&c);
        if (doc)
            json_object_set_new(doc, "file", json_string(out));
        code = doc ? ms_cli_json_print(stdout, doc)
                   : ms_cli_failure(out, "out of memory");
        json_decref(doc);
        return code;
    }
    char roles[64], expires[32];
    s_roles_text(c.roles, roles);
    s_iso(c.not_after, expires);
    printf("certificate for node %s\n"
           "  operator %s, roles %s, max workers %u, expires %s, serial "
           "%llu\n"
           "written to %s\n"
           "On the node's machine: meshsweep pool join %s --data-dir "
           "DATA_DIR\n",
           subject, c.operator_name, roles, (unsigned) c.max_workers, expires,
           (unsigned long long) c.serial, out, out);
    return MS_CLI_EXIT_OK;
}

//  ---- pool enroll -------------------------------------------------------

//  --------------------------------------------------------------------------
//  Help for meshsweep pool enroll.

static void
s_enroll_usage(FILE *out)
{
    fprintf(out,
            "usage: meshsweep pool enroll --operator NAME --out FILE "
            "[--roles worker,submit]\n"
            "           [--expires DATE] [--authority DIR] [--json]\n"
            "\n"
            "Make an enrollment key for a cluster: a new key pair and its "
            "certificate\n(the roles plus enroll), signed by the authority, "
            "saved as an enrollment\nkit FILE (mode 0600). Copy FILE to the "
            "cluster's machines and start\n`meshsweepd --enroll-key FILE`: "
            "each node enrolls its own fresh key at\nfirst start (never clone "
            "one node identity onto many machines). Nodes\nenrolled with it "
            "share its operator.\n"
            "\n"
            "  --operator NAME    the person or group behind the nodes\n"
            "  --roles LIST       worker, submit, or worker,submit (default "
            "worker)\n"
            "  --expires DATE     as for invite (default 1y)\n"
            "  --authority DIR    the pool authority (default "
            "$MESHSWEEP_AUTHORITY or\n"
            "                     ./" S_DEFAULT_AUTHORITY ")\n"
            "  --out FILE         the kit to write (required; never "
            "overwritten)\n"
            "  --json             print the certificate's fields as JSON\n");
}

//  --------------------------------------------------------------------------
//  meshsweep pool enroll

static int
s_enroll_main(int argc, char **argv)
{
    if (ms_cli_wants_help(argc, argv))
        return s_enroll_usage(stdout), MS_CLI_EXIT_OK;
    s_sign_opts_t o = {0};
    for (int i = 1; i < argc; i++) {
        int code = s_sign_option(argc, argv, &i, &o, false);
        if (code > 0)
            return code;
        if (code < 0)
            return ms_cli_usage_error(argv[i], "unknown argument of pool "
                                               "enroll");
    }
    if (!o.out || !*o.out)
        return ms_cli_usage_error("--out", "required: the enrollment kit to "
                                           "write");
    if (access(o.out, F_OK) == 0)
        return ms_cli_usage_error(o.out, "exists already; an enrollment key "
                                         "is never overwritten");
    ms_cert_t c;
    memset(&c, 0, sizeof c);
    int code = s_cert_fields(&o, &c);
    if (code != MS_CLI_EXIT_OK)
        return code;
    c.roles |= MS_CERT_ROLE_ENROLL;
    s_authority_t a;
    if ((code = s_authority_open(&a, s_authority_dir(o.authority))) !=
        MS_CLI_EXIT_OK)
        return code;
    memcpy(c.pool_id, a.pool_id, MS_CERT_POOL_ID_BYTES);
    uint8_t *esk = sodium_malloc(MS_CERT_SECRET_BYTES);
    ms_diag_t d;
    ms_diag_clear(&d);
    int rc = MS_ERR_NOMEM;
    s_serial_t serial = {.fd = -1};
    if (esk &&
        (code = s_serial_take(&a, &serial, &c.serial)) == MS_CLI_EXIT_OK &&
        (rc = ms_cert_keypair(c.subject, esk)) == MS_OK &&
        (rc = ms_cert_sign(&c, a.sk, &d)) == MS_OK)
        rc = ms_cert_enroll_save(o.out, a.pk, esk, &c, &d);
    s_serial_done(&serial, rc == MS_OK); // a failed write uses no serial
    if (esk)
        sodium_free(esk);
    s_authority_close(&a);
    if (code != MS_CLI_EXIT_OK)
        return code;
    if (rc == MS_ERR_CONFLICT)
        return ms_cli_usage_error(o.out, "exists already; not overwritten");
    if (rc != MS_OK)
        return ms_cli_diag_exit(&d, rc, o.out);
    if (o.json_out) {
        json_t *doc = s_cert_json(&c);
        if (doc) {
            json_object_set_new(doc, "file", json_string(o.out));
            json_object_set(doc, "enroll_key", json_object_get(doc, "node_id"));
            json_object_del(doc, "node_id");
        }
        code = doc ? ms_cli_json_print(stdout, doc)
                   : ms_cli_failure(o.out, "out of memory");
        json_decref(doc);
        return code;
    }
    char key[S_KEY_HEX + 1], roles[64], expires[32];
    s_hex(c.subject, MS_CERT_KEY_BYTES, key);
    s_roles_text(c.roles, roles);
    s_iso(c.not_after, expires);
    printf("enrollment key %s\n"
           "  operator %s, roles %s, expires %s, serial %llu\n"
           "kit written to %s (mode 0600: it signs certificates for this "
           "pool)\n"
           "On each machine of the cluster: meshsweepd --enroll-key %s "
           "--data-dir DATA_DIR ...\n",
           key, c.operator_name, roles, expires, (unsigned long long) c.serial,
           o.out, o.out);
    return MS_CLI_EXIT_OK;
}

//  ---- pool join ---------------------------------------------------------

//  meshsweepd's config file of a packaged node (packaging/).
#define S_JOIN_CONFIG "/etc/meshsweep/meshsweepd.conf"

//  --------------------------------------------------------------------------
//  Help for meshsweep pool join.

static void
s_join_usage(FILE *out)
{
    fprintf(
        out,
        "usage: meshsweep pool join CERT [--data-dir DIR | --config FILE]\n"
        "           [--peer NODE_ID@tcp://HOST:PORT]... [--restart] [--json]\n"
        "\n"
        "Install the certificate file CERT (from `meshsweep pool invite`) for "
        "the\nnode whose data dir is DIR: it must be valid and certify that "
        "node\n(DIR/identity/node.pub). It becomes DIR/identity/node.cert, "
        "then the\nrunning node (the holder of DIR/node.lock) gets SIGHUP "
        "and reloads it;\nwith no running node it takes effect at the next "
        "start.\n"
        "\n"
        "  --data-dir DIR     the node's data dir (default: the data_dir of "
        "the\n"
        "                     config file)\n"
        "  --config FILE      meshsweepd's config file, read for data_dir "
        "(default:\n"
        "                     $MESHSWEEP_CONFIG, else " S_JOIN_CONFIG " when\n"
        "                     it exists: a packaged node needs neither "
        "option)\n"
        "  --peer ID@tcp://HOST:PORT\n"
        "                     a static peer of the pool, where broadcast does "
        "not\n"
        "                     reach (repeatable; the whole node id is "
        "required).\n"
        "                     Written to DIR/identity/peers.conf (`peer = ...` "
        "lines,\n"
        "                     meshsweepd's config syntax), replacing the "
        "peers of an\n"
        "                     earlier join; meshsweepd reads it at "
        "start and on\n"
        "                     SIGHUP\n"
        "  --restart          run `systemctl restart meshsweepd` instead of "
        "SIGHUP\n"
        "                     (a failure says so, exit 1; the certificate "
        "stays\n"
        "                     installed)\n"
        "  --json             print what was done as JSON\n");
}

//  --------------------------------------------------------------------------
//  Check a static peer "NODE_ID@tcp://HOST:PORT" (the id is required with
//  an authority: the dialer needs the peer's key). Exit code.

static int
s_check_peer(const char *spec)
{
    char why[300];
    if (ms_peers_conf_check_spec(spec, true, why, sizeof why) != MS_OK)
        return ms_cli_usage_error(spec, "--peer: %s", why);
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  The pid of the running node of data_dir: the holder of the fcntl lock
//  on DIR/node.lock (the pid written in the file must agree when the lock
//  reports none, as in another pid namespace). 0 when no node runs.

static long
s_running_node(const char *data_dir, char lock_path[PATH_MAX])
{
    if (s_path(lock_path, data_dir, "node.lock") != MS_CLI_EXIT_OK)
        return 0;
    // Read-only is enough: F_GETLK does not need write access (Linux), so
    // a user who may not write the node's files still finds it.
    int fd = open(lock_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct flock who = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    long pid = 0;
    if (fcntl(fd, F_GETLK, &who) == 0 && who.l_type != F_UNLCK) {
        pid = who.l_pid;
        if (pid <= 0) {
            char text[32] = {0};
            if (pread(fd, text, sizeof text - 1, 0) > 0)
                pid = strtol(text, NULL, 10);
        }
    }
    // Closing our descriptor would drop locks we held on the file; we
    // hold none.
    close(fd);
    return pid > 0 ? pid : 0;
}

//  What the config reader keeps.
typedef struct {
    char *data_dir;     // the data_dir key's value (owned), NULL when none
    bool other_section; // a section other than [meshsweepd] was met
} s_join_ini_t;

//  --------------------------------------------------------------------------
//  libinih handler: keep data_dir (no section or [meshsweepd], as
//  meshsweepd reads it); meshsweepd itself checks every other key.

static int
s_join_ini_key(void *user, const char *section, const char *name,
               const char *value)
{
    s_join_ini_t *ini = user;
    if (section && *section && strcmp(section, "meshsweepd") != 0) {
        ini->other_section = true;
        return 1;
    }
    if (strcmp(name, "data_dir") == 0) {
        free(ini->data_dir);
        ini->data_dir = strdup(value);
        return ini->data_dir != NULL;
    }
    return 1;
}

//  --------------------------------------------------------------------------
//  The data dir named by meshsweepd's config file path, into *out (owned).
//  Exit code (a usage error naming the file when it has no data_dir).

static int
s_join_config_data_dir(const char *path, char **out)
{
    *out = NULL;
    s_join_ini_t ini = {0};
    int line = ini_parse(path, s_join_ini_key, &ini);
    if (line == -1)
        return ms_cli_usage_error(path, "cannot read meshsweepd's config: %s",
                                  strerror(errno));
    if (line != 0) {
        free(ini.data_dir);
        if (line < 0)
            return ms_cli_failure(path, "out of memory");
        return ms_cli_usage_error(path,
                                  "line %d: not INI (meshsweepd "
                                  "--config %s --check-config says more)",
                                  line, path);
    }
    if (!ini.data_dir || !*ini.data_dir) {
        free(ini.data_dir);
        return ms_cli_usage_error(path, "sets no data_dir: give --data-dir "
                                        "DIR (the node's data dir)");
    }
    *out = ini.data_dir;
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  Run `systemctl restart meshsweepd`. Exit code.

static int
s_systemctl_restart(void)
{
    char *args[] = {"systemctl", "restart", "meshsweepd", NULL};
    pid_t pid = 0;
    int err = posix_spawnp(&pid, "systemctl", NULL, NULL, args, environ);
    if (err != 0)
        return ms_cli_failure("systemctl restart meshsweepd",
                              "cannot run systemctl: %s (no systemd here?); "
                              "the certificate is installed: start "
                              "meshsweepd, or join again without --restart "
                              "to signal a running node",
                              strerror(err));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return ms_cli_failure("systemctl", "wait: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return ms_cli_failure("systemctl restart meshsweepd",
                              "failed (status %d); the certificate is "
                              "installed and takes effect at the next start",
                              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return MS_CLI_EXIT_OK;
}

static int s_join_in(const char *cert, const char *data_dir,
                     const char *const *peers, int n_peers, bool restart,
                     bool json_out);

//  --------------------------------------------------------------------------
//  meshsweep pool join

static int
s_join_main(int argc, char **argv)
{
    if (ms_cli_wants_help(argc, argv))
        return s_join_usage(stdout), MS_CLI_EXIT_OK;
    const char *cert = NULL, *data_dir = NULL, *config = NULL;
    const char *peers[256];
    int n_peers = 0;
    bool restart = false, json_out = false;
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v = NULL;
        if (ms_cli_arg_value(argc, argv, &i, "--data-dir", &v, &missing)) {
            if (missing || !*v)
                return ms_cli_usage_error("--data-dir", "needs a directory");
            data_dir = v;
        } else if (ms_cli_arg_value(argc, argv, &i, "--config", &v, &missing)) {
            if (missing || !*v)
                return ms_cli_usage_error("--config", "needs a file");
            config = v;
        } else if (ms_cli_arg_value(argc, argv, &i, "--peer", &v, &missing)) {
            if (missing)
                return ms_cli_usage_error("--peer",
                                          "needs NODE_ID@tcp://HOST:PORT");
            int code = s_check_peer(v);
            if (code != MS_CLI_EXIT_OK)
                return code;
            if (n_peers == (int) (sizeof peers / sizeof *peers))
                return ms_cli_usage_error("--peer", "too many peers");
            peers[n_peers++] = v;
        } else if (strcmp(argv[i], "--restart") == 0)
            restart = true;
        else if (strcmp(argv[i], "--json") == 0)
            json_out = true;
        else if (argv[i][0] == '-' && argv[i][1])
            return ms_cli_usage_error(argv[i], "unknown option of pool join");
        else if (cert)
            return ms_cli_usage_error(argv[i], "unexpected argument");
        else
            cert = argv[i];
    }
    if (!cert)
        return ms_cli_usage_error("pool join",
                                  "missing CERT (meshsweep pool join --help)");
    // The data dir: --data-dir, else the data_dir of meshsweepd's config
    // file (--config, else $MESHSWEEP_CONFIG, else the packaged one when
    // it exists).
    char *config_dir = NULL;
    if (!data_dir) {
        const char *env = getenv("MESHSWEEP_CONFIG");
        if (!config && env && *env)
            config = env;
        if (!config && access(S_JOIN_CONFIG, F_OK) == 0)
            config = S_JOIN_CONFIG;
        if (!config)
            return ms_cli_usage_error(
                "--data-dir",
                "required: the node's data dir (or --config "
                "FILE, meshsweepd's config file with data_dir; "
                "%s does not exist)",
                S_JOIN_CONFIG);
        int ccode = s_join_config_data_dir(config, &config_dir);
        if (ccode != MS_CLI_EXIT_OK)
            return ccode;
        data_dir = config_dir;
    }
    int jcode = s_join_in(cert, data_dir, peers, n_peers, restart, json_out);
    free(config_dir);
    return jcode;
}

//  --------------------------------------------------------------------------
//  pool join once the data dir is known. Exit code.

static int
s_join_in(const char *cert, const char *data_dir, const char *const *peers,
          int n_peers, bool restart, bool json_out)
{
    if (sodium_init() < 0)
        return ms_cli_failure("libsodium", "cannot initialise");

    // The certificate: format, chain, expiry.
    uint8_t auth_pk[MS_CERT_KEY_BYTES];
    ms_cert_chain_t chain;
    ms_diag_t d;
    ms_diag_clear(&d);
    int64_t now_s = (int64_t) time(NULL);
    int rc = ms_cert_bundle_load(cert, auth_pk, &chain, now_s, &d);
    if (rc != MS_OK) {
        ms_cli_diag_exit(&d, rc, cert);
        return rc == MS_ERR_IO || rc == MS_ERR_NOMEM ? MS_CLI_EXIT_FAILURE
                                                     : MS_CLI_EXIT_USAGE;
    }
    // The node of the data dir.
    char path[PATH_MAX], idpath[PATH_MAX];
    int code = s_path(idpath, data_dir, "identity");
    if (code != MS_CLI_EXIT_OK ||
        (code = s_path(path, idpath, "node.pub")) != MS_CLI_EXIT_OK)
        return code;
    char *pub = NULL;
    if (ms_cli_read_file(path, &pub, NULL, &d) != MS_OK) {
        if (access(path, F_OK) == 0 || errno != ENOENT)
            return ms_cli_failure(path, "%s%s", d.reason,
                                  errno == EACCES
                                      ? " (run it as root or as the node's "
                                        "user: sudo meshsweep pool join ...)"
                                      : ""); // e.g. permissions
        return ms_cli_usage_error(path,
                                  "no node identity here (start `meshsweepd "
                                  "--data-dir %s` once to make one, then "
                                  "invite its node id)",
                                  data_dir);
    }
    pub[strcspn(pub, "\r\n")] = 0;
    uint8_t node_pk[MS_CERT_KEY_BYTES];
    size_t got = 0;
    bool ok = strlen(pub) == S_KEY_HEX &&
              sodium_hex2bin(node_pk, sizeof node_pk, pub, S_KEY_HEX, NULL,
                             &got, NULL) == 0 &&
              got == sizeof node_pk;
    free(pub);
    if (!ok)
        return ms_cli_usage_error(path, "not a node id (64 hex characters)");
    char node_hex[S_KEY_HEX + 1], subject_hex[S_KEY_HEX + 1];
    s_hex(node_pk, sizeof node_pk, node_hex);
    s_hex(chain.leaf.subject, MS_CERT_KEY_BYTES, subject_hex);
    if (sodium_memcmp(node_pk, chain.leaf.subject, MS_CERT_KEY_BYTES) != 0)
        return ms_cli_usage_error(
            cert, "certifies node %.12s..., but the node of %s is %.12s...",
            subject_hex, data_dir, node_hex);

    // Install it (atomic; mode 0644), then the peers.
    if ((code = s_path(path, idpath, "node.cert")) != MS_CLI_EXIT_OK)
        return code;
    // A running node never changes pools on SIGHUP (it refuses the new
    // certificate): replacing its certificate by one of another pool would
    // only move it at its next start, silently. Stop it first (or use
    // --restart).
    {
        uint8_t old_auth[MS_CERT_KEY_BYTES];
        ms_cert_chain_t old;
        char lock_probe[PATH_MAX];
        if (!restart &&
            ms_cert_bundle_load(path, old_auth, &old, 0, NULL) == MS_OK &&
            sodium_memcmp(old.leaf.pool_id, chain.leaf.pool_id,
                          MS_CERT_POOL_ID_BYTES) != 0 &&
            s_running_node(data_dir, lock_probe) > 0) {
            char old_hex[2 * MS_CERT_POOL_ID_BYTES + 1];
            char new_hex[2 * MS_CERT_POOL_ID_BYTES + 1];
            s_hex(old.leaf.pool_id, MS_CERT_POOL_ID_BYTES, old_hex);
            s_hex(chain.leaf.pool_id, MS_CERT_POOL_ID_BYTES, new_hex);
            return ms_cli_usage_error(
                cert,
                "is for pool %.12s..., but the node running on %s is in "
                "pool %.12s...: a running node does not change pools; stop "
                "it first (or use --restart), nothing was installed",
                new_hex, data_dir, old_hex);
        }
    }
    rc = ms_cert_bundle_save(path, auth_pk, &chain, &d);
    if (rc != MS_OK)
        return ms_cli_diag_exit(&d, rc, path);
    if (chmod(path, 0644) != 0)
        return ms_cli_failure(path, "chmod: %s", strerror(errno));
    char peers_path[PATH_MAX] = "";
    if (n_peers) {
        if ((code = s_path(peers_path, idpath, "peers.conf")) != MS_CLI_EXIT_OK)
            return code;
        size_t cap = 200 + (size_t) n_peers * 400;
        char *text = malloc(cap);
        if (!text)
            return ms_cli_failure(peers_path, "out of memory");
        size_t len = (size_t) snprintf(
            text, cap,
            "# Static peers of the pool, written by `meshsweep pool join`\n"
            "# (meshsweepd reads it at start and on SIGHUP; peer lines "
            "only).\n");
        for (int i = 0; i < n_peers; i++)
            len += (size_t) snprintf(text + len, cap - len, "peer = %s\n",
                                     peers[i]);
        code = s_write_file(peers_path, text, 0644);
        free(text);
        if (code != MS_CLI_EXIT_OK)
            return code;
    }

    // Tell the node.
    char lock_path[PATH_MAX];
    long pid = 0;
    const char *action = "none";
    if (restart) {
        if ((code = s_systemctl_restart()) != MS_CLI_EXIT_OK)
            return code;
        action = "restarted";
    } else if ((pid = s_running_node(data_dir, lock_path)) > 0) {
        if (kill((pid_t) pid, SIGHUP) != 0)
            return ms_cli_failure(lock_path,
                                  "cannot signal the running node (pid %ld): "
                                  "%s; the certificate is installed and takes "
                                  "effect at the next start",
                                  pid, strerror(errno));
        action = "signalled";
    }

    char pool_hex[2 * MS_CERT_POOL_ID_BYTES + 1];
    s_hex(chain.leaf.pool_id, MS_CERT_POOL_ID_BYTES, pool_hex);
    if (json_out) {
        json_t *doc = json_pack(
            "{s:s, s:s, s:s, s:s, s:s, s:o, s:o}", "node_id", node_hex,
            "pool_id", pool_hex, "operator", chain.leaf.operator_name,
            "certificate", path, "node", action, "pid",
            pid > 0 ? json_integer(pid) : json_null(), "peers_file",
            peers_path[0] ? json_string(peers_path) : json_null());
        code = doc ? ms_cli_json_print(stdout, doc)
                   : ms_cli_failure(path, "out of memory");
        json_decref(doc);
        return code;
    }
    printf("certificate for node %.12s... (pool %.12s..., operator %s) "
           "installed as %s\n",
           node_hex, pool_hex, chain.leaf.operator_name, path);
    if (peers_path[0])
        printf("%d static peer%s written to %s (meshsweepd reads it at "
               "start and on SIGHUP)\n",
               n_peers, n_peers == 1 ? "" : "s", peers_path);
    if (restart)
        printf("meshsweepd restarted (systemctl restart meshsweepd)\n");
    else if (pid > 0)
        printf("sent SIGHUP to the running node (pid %ld): it reloads its "
               "certificate\n",
               pid);
    else
        printf("no node is running on %s: the certificate takes effect at "
               "its next start\n",
               data_dir);
    return MS_CLI_EXIT_OK;
}

//  ---- pool revoke -------------------------------------------------------

//  --------------------------------------------------------------------------
//  Help for meshsweep pool revoke.

static void
s_revoke_usage(FILE *out)
{
    fprintf(out,
            "usage: meshsweep pool revoke NODE_ID [--cut all|INC:SEQ,...] "
            "[--authority DIR]\n"
            "           [--out FILE] [--force] [--node URL] [--json]\n"
            "\n"
            "Sign a revocation of NODE_ID (a node id or an enrollment key, "
            "64 hex\ncharacters) with the pool authority, and write it to "
            "FILE (default\nNODE_ID12-SERIAL.revoke here: each item its own "
            "file).\n"
            "\n"
            "  --cut all          none of its records counts any more, past "
            "ones\n"
            "                     included (default: a stolen key, a node "
            "that lied)\n"
            "  --cut INC:SEQ,...  keep its records up to SEQ of each "
            "incarnation INC\n"
            "                     (16 hex digits, as the node shows them); "
            "later ones,\n"
            "                     and other incarnations, stop counting\n"
            "  --authority DIR    the pool authority (default "
            "$MESHSWEEP_AUTHORITY or\n"
            "                     ./" S_DEFAULT_AUTHORITY ")\n"
            "  --out FILE         where to write the revocation (an existing "
            "file is\n"
            "                     refused: it may hold an item already "
            "published)\n"
            "  --force            overwrite an existing --out FILE\n"
            "  --node URL         also publish it to that node's API (POST\n"
            "                     /api/v1/authority), which gossips it to "
            "every node\n"
            "                     at once (later: meshsweep pool publish "
            "FILE)\n"
            "  --json             print the item's fields as JSON\n");
}

//  --------------------------------------------------------------------------
//  Help for meshsweep pool clear.

static void
s_clear_usage(FILE *out)
{
    fprintf(out,
            "usage: meshsweep pool clear NODE_ID (--node URL | --cut "
            "INC:SEQ[,INC:SEQ...])\n"
            "           [--authority DIR] [--out FILE] [--force] [--json]\n"
            "\n"
            "Sign a quarantine clear of NODE_ID (64 hex characters) with the "
            "pool\nauthority and write it to FILE (default "
            "NODE_ID12-SERIAL.clear here). The clear\ncarries a cut of "
            "NODE_ID's log; every node "
            "that holds it forgives exactly\nthe strikes earned by NODE_ID's "
            "results inside the cut, whenever the clear\nand the results "
            "reach it, so its quarantine lifts. Strikes of results\nabove "
            "the cut (later ones) still count.\n"
            "\n"
            "  --node URL         check that NODE_ID is quarantined there "
            "(GET\n"
            "                     /api/v1/status), take the cut from that "
            "node's view of\n"
            "                     NODE_ID's log (GET /api/v1/logs/NODE_ID: "
            "per\n"
            "                     incarnation the highest seq it holds) and "
            "publish the\n"
            "                     clear there; it gossips it to every node\n"
            "  --cut INC:SEQ,...  the cut itself: incarnations (16 hex "
            "digits) with the\n"
            "                     highest seq forgiven (decimal, 1 or more); "
            "with --node\n"
            "                     too, each incarnation must be in that "
            "node's view of\n"
            "                     the log, its seq no higher than the one "
            "held there.\n"
            "                     Without --node nothing is checked (a "
            "warning says so)\n"
            "  --authority DIR    the pool authority (default "
            "$MESHSWEEP_AUTHORITY or\n"
            "                     ./" S_DEFAULT_AUTHORITY ")\n"
            "  --out FILE         where to write the clear (an existing file "
            "is refused)\n"
            "  --force            sign even when --node does not show NODE_ID "
            "quarantined\n"
            "                     or lacks an incarnation or seq of --cut (a "
            "clear in\n"
            "                     advance), and overwrite an existing --out "
            "FILE\n"
            "  --json             print the item's fields as JSON\n");
}

//  --------------------------------------------------------------------------
//  Parse --cut into item (entries sorted by incarnation): for a revocation
//  (CLEAR false) `all` or INC:SEQ,...; for a clear (CLEAR true) only
//  INC:SEQ,... Strict: 16 hex digits, a colon, a decimal seq of 1 or more,
//  single commas between entries and none at either end, no incarnation
//  twice. Exit code; one error line naming the entry.

static int
s_parse_cut(const char *text, ms_authority_item_t *item, bool clear)
{
    const char *expected =
        clear ? "expected INCARNATION:SEQ entries (16 hex digits, a colon, a "
                "decimal seq of 1 or more) separated by commas"
              : "expected all, or INCARNATION:SEQ entries (16 hex digits, a "
                "colon, a decimal seq of 1 or more) separated by commas";
    item->cut_all = false;
    item->n_cuts = 0;
    if (!*text)
        return ms_cli_usage_error("--cut", "empty: %s", expected);
    if (!clear && strcmp(text, "all") == 0) {
        item->cut_all = true;
        return MS_CLI_EXIT_OK;
    }
    const char *p = text;
    for (;;) {
        size_t n = strcspn(p, ",");
        if (n == 0)
            return ms_cli_usage_error(
                "--cut",
                "'%s': an empty entry (entries are separated by "
                "single commas, none at either end)",
                text);
        if (n == 3 && strncmp(p, "all", 3) == 0)
            return ms_cli_usage_error(
                "--cut", "%s",
                clear ? "a clear forgives the strikes of a cut of the node's "
                        "log, not 'all' (give INCARNATION:SEQ,...)"
                      : "'all' stands alone: it cannot be combined with "
                        "INCARNATION:SEQ entries");
        if (item->n_cuts == MS_AUTHORITY_ITEM_MAX_CUTS)
            return ms_cli_usage_error("--cut", "more than %d incarnations",
                                      MS_AUTHORITY_ITEM_MAX_CUTS);
        char entry[64];
        if (n >= sizeof entry)
            return ms_cli_usage_error("--cut", "'%.*s...' is too long", 40, p);
        memcpy(entry, p, n);
        entry[n] = 0;
        const char *digits = entry + 17;
        size_t n_digits = n > 17 ? n - 17 : 0;
        if (n < 18 || entry[16] != ':' ||
            strspn(entry, "0123456789abcdefABCDEF") != 16 ||
            strspn(digits, "0123456789") != n_digits || n_digits > 19)
            return ms_cli_usage_error("--cut", "'%s': %s", entry, expected);
        unsigned long long inc = strtoull(entry, NULL, 16),
                           seq = strtoull(digits, NULL, 10);
        if (seq == 0)
            return ms_cli_usage_error("--cut",
                                      "'%s': seq must be 1 or more (a log's "
                                      "seqs start at 1)",
                                      entry);
        // Insert in order; a repeated incarnation is refused.
        uint32_t at = item->n_cuts;
        while (at > 0 && item->cuts[at - 1].incarnation > inc)
            at--;
        if (at > 0 && item->cuts[at - 1].incarnation == inc)
            return ms_cli_usage_error("--cut",
                                      "incarnation %016llx given "
                                      "twice",
                                      inc);
        memmove(&item->cuts[at + 1], &item->cuts[at],
                (item->n_cuts - at) * sizeof item->cuts[0]);
        item->cuts[at].incarnation = inc;
        item->cuts[at].max_seq = seq;
        item->n_cuts++;
        p += n;
        if (!*p)
            break;
        p++; // the comma
    }
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  Print a cut as it is kept: `all` or INC:SEQ,... (sorted).

static void
s_print_cut(FILE *out, const ms_authority_item_t *it)
{
    if (it->cut_all)
        fputs("all", out);
    for (uint32_t i = 0; !it->cut_all && i < it->n_cuts; i++)
        fprintf(out, "%s%016llx:%llu", i ? "," : "",
                (unsigned long long) it->cuts[i].incarnation,
                (unsigned long long) it->cuts[i].max_seq);
}

//  --------------------------------------------------------------------------
//  An authority item's fields as JSON (caller decrefs).

static json_t *
s_item_json(const ms_authority_item_t *it)
{
    char subject[S_KEY_HEX + 1], issuer[S_KEY_HEX + 1],
        pool[2 * MS_CERT_POOL_ID_BYTES + 1], issued[32];
    s_hex(it->subject, MS_CERT_KEY_BYTES, subject);
    s_hex(it->issuer, MS_CERT_KEY_BYTES, issuer);
    s_hex(it->pool_id, MS_CERT_POOL_ID_BYTES, pool);
    s_iso(it->issued_at, issued);
    json_t *doc =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "kind",
                  ms_authority_item_kind_name(it->kind), "pool_id", pool,
                  "subject", subject, "issuer", issuer, "issued_at", issued,
                  "serial", (json_int_t) it->serial);
    if (doc && (it->kind == MS_AUTHORITY_ITEM_REVOKE ||
                it->kind == MS_AUTHORITY_ITEM_CLEAR_QUARANTINE)) {
        json_t *cut = it->cut_all ? json_string("all") : json_array();
        for (uint32_t i = 0; cut && !it->cut_all && i < it->n_cuts; i++) {
            char inc[17];
            snprintf(inc, sizeof inc, "%016llx",
                     (unsigned long long) it->cuts[i].incarnation);
            json_array_append_new(
                cut, json_pack("{s:s, s:I}", "incarnation", inc, "max_seq",
                               (json_int_t) it->cuts[i].max_seq));
        }
        json_object_set_new(doc, "cut", cut ? cut : json_null());
    }
    return doc;
}

//  --------------------------------------------------------------------------
static int s_publish(const char *path, const char *node_url, bool json_out);

//  --------------------------------------------------------------------------
//  GET path of a node's API as JSON into *doc (caller decrefs). Exit code;
//  prints the error line.

static int
s_get_json(const char *node_url, const char *path, json_t **doc)
{
    *doc = NULL;
    ms_diag_t d;
    ms_diag_clear(&d);
    const char *url = ms_cli_node_url(node_url);
    long status = 0;
    char *body = NULL;
    int rc = ms_cli_http("GET", url, path, NULL, NULL, 0, &status, &body, &d);
    if (rc != MS_OK)
        return ms_cli_diag_exit(&d, rc, url);
    if (status < 200 || status > 299) {
        int code = ms_cli_http_error(status, body, path, &d);
        fprintf(stderr, "meshsweep: %s%s: %s\n", url, path, d.reason);
        free(body);
        return code;
    }
    json_error_t err;
    *doc = body ? json_loads(body, 0, &err) : NULL;
    free(body);
    if (!json_is_object(*doc)) {
        json_decref(*doc);
        *doc = NULL;
        return ms_cli_failure(url, "%s: not a JSON object", path);
    }
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  A node's view of NODE_ID's log (GET /api/v1/logs/NODE_ID) into view's
//  cuts (entries with no record held, max_seq 0, left out). Exit code.

static int
s_log_view(const char *node_url, const char *node_hex,
           ms_authority_item_t *view)
{
    const char *url = ms_cli_node_url(node_url);
    char path[128];
    snprintf(path, sizeof path, "/api/v1/logs/%s", node_hex);
    json_t *doc = NULL;
    int code = s_get_json(node_url, path, &doc);
    if (code != MS_CLI_EXIT_OK)
        return code;
    json_t *cut = json_object_get(doc, "cut");
    view->cut_all = false;
    view->n_cuts = 0;
    if (!json_is_array(cut))
        code = ms_cli_failure(url, "%s: not a log view (no cut array)", path);
    else if (json_array_size(cut) > MS_AUTHORITY_ITEM_MAX_CUTS)
        code = ms_cli_failure(url, "%s: more than %d incarnations", path,
                              MS_AUTHORITY_ITEM_MAX_CUTS);
    for (size_t i = 0; code == MS_CLI_EXIT_OK && i < json_array_size(cut);
         i++) {
        json_t *e = json_array_get(cut, i);
        const char *inc = json_string_value(json_object_get(e, "incarnation"));
        json_t *seq = json_object_get(e, "max_seq");
        char *end = NULL;
        unsigned long long v = inc ? strtoull(inc, &end, 16) : 0;
        if (!inc || strlen(inc) != 16 || !end || *end ||
            !json_is_integer(seq) || json_integer_value(seq) < 0)
            code = ms_cli_failure(url,
                                  "%s: entry %zu is not {incarnation, "
                                  "max_seq}",
                                  path, i);
        else if (json_integer_value(seq) > 0) {
            view->cuts[view->n_cuts].incarnation = v;
            view->cuts[view->n_cuts].max_seq =
                (uint64_t) json_integer_value(seq);
            view->n_cuts++;
        }
    }
    json_decref(doc);
    return code;
}

//  --------------------------------------------------------------------------
//  A clear's cut from a node's view of NODE_ID's log into item's cuts.
//  Exit code.

static int
s_cut_from_node(const char *node_url, const char *node_hex,
                ms_authority_item_t *item)
{
    int code = s_log_view(node_url, node_hex, item);
    if (code == MS_CLI_EXIT_OK && item->n_cuts == 0)
        code = ms_cli_failure(ms_cli_node_url(node_url),
                              "holds no records of %.12s: nothing to forgive "
                              "(give --cut, or ask a node that has them)",
                              node_hex);
    // Through the parser, as --cut: one set of rules for both ways in.
    size_t cap = (size_t) item->n_cuts * 48 + 1;
    char *text = code == MS_CLI_EXIT_OK ? calloc(1, cap) : NULL;
    if (code == MS_CLI_EXIT_OK && !text)
        code = ms_cli_failure(node_hex, "out of memory");
    size_t used = 0;
    for (uint32_t i = 0; code == MS_CLI_EXIT_OK && i < item->n_cuts; i++)
        used += (size_t) snprintf(
            text + used, cap - used, "%s%016llx:%llu", i ? "," : "",
            (unsigned long long) item->cuts[i].incarnation,
            (unsigned long long) item->cuts[i].max_seq);
    if (code == MS_CLI_EXIT_OK)
        code = s_parse_cut(text, item, true);
    free(text);
    return code;
}

//  --------------------------------------------------------------------------
//  Before a clear is signed against a --node: NODE_ID must be quarantined
//  in that node's verification standing (GET /api/v1/status,
//  verification.nodes[]), and each incarnation of a given --cut must be in
//  its view of the log with a seq no higher than held there (else the
//  clear forgives results not yet seen: a pardon in advance). Exit code:
//  2 with one line naming what and --force when refused.

static int
s_clear_checks(const char *node_url, const char *node_hex,
               const ms_authority_item_t *item, bool cut_given)
{
    const char *url = ms_cli_node_url(node_url);
    json_t *doc = NULL;
    int code = s_get_json(node_url, "/api/v1/status", &doc);
    if (code != MS_CLI_EXIT_OK)
        return code;
    json_t *nodes =
        json_object_get(json_object_get(doc, "verification"), "nodes");
    json_t *mine = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(nodes, i, e)
    {
        const char *id = json_string_value(json_object_get(e, "node"));
        if (id && strcmp(id, node_hex) == 0)
            mine = e;
    }
    if (!json_is_array(nodes))
        code = ms_cli_failure(url, "/api/v1/status: no verification standing "
                                   "(verification.nodes)");
    else if (!mine)
        code = ms_cli_usage_error(
            node_hex,
            "%s has no verification standing of this node (not a peer of "
            "it): nothing known to clear (ask a node that has it as a peer, "
            "or --force)",
            url);
    else if (!json_is_true(json_object_get(mine, "quarantined")))
        code = ms_cli_usage_error(
            node_hex,
            "not quarantined on %s (%lld strikes): nothing to clear "
            "(--force signs it anyway)",
            url,
            (long long) json_integer_value(json_object_get(mine, "strikes")));
    json_decref(doc);
    if (code != MS_CLI_EXIT_OK || !cut_given)
        return code;
    ms_authority_item_t *view = calloc(1, sizeof *view);
    if (!view)
        return ms_cli_failure(node_hex, "out of memory");
    code = s_log_view(node_url, node_hex, view);
    for (uint32_t k = 0; code == MS_CLI_EXIT_OK && k < item->n_cuts; k++) {
        const ms_authority_cut_t *c = &item->cuts[k];
        uint32_t j = 0;
        while (j < view->n_cuts && view->cuts[j].incarnation != c->incarnation)
            j++;
        if (j == view->n_cuts)
            code = ms_cli_usage_error(
                "--cut",
                "incarnation %016llx of %.12s is not in %s's view of its log "
                "(GET /api/v1/logs): a clear of results not seen yet "
                "(--force signs it anyway)",
                (unsigned long long) c->incarnation, node_hex, url);
        else if (c->max_seq > view->cuts[j].max_seq)
            code = ms_cli_usage_error(
                "--cut",
                "%016llx:%llu goes beyond seq %llu, the highest %s holds: a "
                "clear of results not seen yet (--force signs it anyway)",
                (unsigned long long) c->incarnation,
                (unsigned long long) c->max_seq,
                (unsigned long long) view->cuts[j].max_seq, url);
    }
    free(view);
    return code;
}

//  --------------------------------------------------------------------------
//  meshsweep pool revoke, and pool clear (CLEAR: a quarantine clear, whose
//  cut is --cut or the --node's view of the node's log).

static int
s_item_main(int argc, char **argv, bool clear)
{
    const char *cmd = clear ? "pool clear" : "pool revoke";
    if (ms_cli_wants_help(argc, argv))
        return clear ? s_clear_usage(stdout) : s_revoke_usage(stdout),
               MS_CLI_EXIT_OK;
    const char *node = NULL, *cut = clear ? NULL : "all", *authority = NULL,
               *out = NULL;
    const char *node_url = NULL;
    bool json_out = false, force = false;
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v = NULL;
        int rc_arg = MS_CLI_EXIT_OK;
        if (ms_cli_connection_arg(argc, argv, &i, &node_url, &rc_arg)) {
            if (rc_arg != MS_CLI_EXIT_OK)
                return rc_arg;
            if (node_url && !*node_url)
                return ms_cli_usage_error("--node", "needs a URL");
        } else if (ms_cli_arg_value(argc, argv, &i, "--cut", &v, &missing)) {
            if (missing)
                return ms_cli_usage_error("--cut",
                                          clear ? "needs INCARNATION:SEQ,..."
                                                : "needs all or "
                                                  "INCARNATION:SEQ,...");
            cut = v;
        } else if (ms_cli_arg_value(argc, argv, &i, "--authority", &v,
                                    &missing)) {
            if (missing)
                return ms_cli_usage_error("--authority", "needs a directory");
            authority = v;
        } else if (ms_cli_arg_value(argc, argv, &i, "--out", &v, &missing)) {
            if (missing || !*v)
                return ms_cli_usage_error("--out", "needs a file");
            out = v;
        } else if (strcmp(argv[i], "--json") == 0)
            json_out = true;
        else if (strcmp(argv[i], "--force") == 0)
            force = true;
        else if (argv[i][0] == '-' && argv[i][1])
            return ms_cli_usage_error(argv[i],
                                      clear ? "unknown option of pool clear"
                                            : "unknown option of pool revoke");
        else if (node)
            return ms_cli_usage_error(argv[i], "unexpected argument");
        else
            node = argv[i];
    }
    if (!node)
        return ms_cli_usage_error(cmd,
                                  "missing NODE_ID (see meshsweep %s "
                                  "--help)",
                                  cmd);
    if (clear && !cut && !node_url)
        return ms_cli_usage_error(cmd, "needs a cut: --node URL (that "
                                       "node's view of the log) or --cut "
                                       "INCARNATION:SEQ,...");
    if (out && !force && access(out, F_OK) == 0)
        return ms_cli_usage_error(out, "exists already; not overwritten (it "
                                       "may hold an item already published: "
                                       "choose another --out, or --force)");
    ms_authority_item_t *it = calloc(1, sizeof *it);
    if (!it)
        return ms_cli_failure(cmd, "out of memory");
    it->kind =
        clear ? MS_AUTHORITY_ITEM_CLEAR_QUARANTINE : MS_AUTHORITY_ITEM_REVOKE;
    s_authority_t a = {0};
    char subject[S_KEY_HEX + 1] = "";
    int code = s_parse_node_id(node, it->subject);
    if (code == MS_CLI_EXIT_OK)
        s_hex(it->subject, MS_CERT_KEY_BYTES, subject);
    if (code == MS_CLI_EXIT_OK && cut)
        code = s_parse_cut(cut, it, clear);
    if (code == MS_CLI_EXIT_OK && clear && node_url && !force)
        code = s_clear_checks(node_url, subject, it, cut != NULL);
    if (code == MS_CLI_EXIT_OK && clear && !cut)
        code = s_cut_from_node(node_url, subject, it);
    if (code == MS_CLI_EXIT_OK && clear && !node_url)
        fprintf(stderr,
                "meshsweep: warning: %.12s: offline clear, nothing checked "
                "(that it is quarantined, that the cut's results exist): "
                "give --node URL to check\n",
                subject);
    if (code == MS_CLI_EXIT_OK)
        code = s_authority_open(&a, s_authority_dir(authority));
    s_serial_t serial = {.fd = -1};
    if (code == MS_CLI_EXIT_OK)
        code = s_serial_take(&a, &serial, &it->serial);
    char out_default[64];
    snprintf(out_default, sizeof out_default, "%.12s-%llu.%s", subject,
             (unsigned long long) it->serial, clear ? "clear" : "revoke");
    if (!out)
        out = out_default;
    if (code == MS_CLI_EXIT_OK && !force && out == out_default &&
        access(out, F_OK) == 0)
        code = ms_cli_usage_error(out, "exists already; not overwritten "
                                       "(name another file with --out, or "
                                       "--force)");
    bool written = false;
    if (code == MS_CLI_EXIT_OK) {
        ms_diag_t d;
        ms_diag_clear(&d);
        it->issued_at = (int64_t) time(NULL);
        int rc = ms_authority_item_sign(it, a.sk, &d);
        if (rc == MS_OK)
            rc = ms_authority_item_save(out, it, &d);
        written = rc == MS_OK;
        if (rc != MS_OK)
            code = ms_cli_diag_exit(&d, rc, out);
    }
    s_serial_done(&serial, written); // a failed write uses no serial
    s_authority_close(&a);
    if (code == MS_CLI_EXIT_OK && json_out) {
        json_t *doc = s_item_json(it);
        if (doc)
            json_object_set_new(doc, "file", json_string(out));
        code = doc ? ms_cli_json_print(stdout, doc)
                   : ms_cli_failure(out, "out of memory");
        json_decref(doc);
    } else if (code == MS_CLI_EXIT_OK) {
        printf("%s of %s (cut ", clear ? "quarantine clear" : "revocation",
               subject);
        s_print_cut(stdout, it);
        printf(", serial %llu) written to %s\n",
               (unsigned long long) it->serial, out);
    }
    free(it);
    if (code == MS_CLI_EXIT_OK && node_url)
        code = s_publish(out, node_url, json_out);
    else if (code == MS_CLI_EXIT_OK && !json_out)
        printf("Publish it with: meshsweep pool publish %s --node URL\n", out);
    return code;
}

//  meshsweep pool revoke

static int
s_revoke_main(int argc, char **argv)
{
    return s_item_main(argc, argv, false);
}

//  --------------------------------------------------------------------------
//  meshsweep pool clear

static int
s_clear_main(int argc, char **argv)
{
    return s_item_main(argc, argv, true);
}

//  ---- pool publish ------------------------------------------------------

//  --------------------------------------------------------------------------
//  POST an item file (or a certificate bundle) to a node's
//  /api/v1/authority: the node checks it, keeps it, applies it and
//  gossips it to every node.

static int
s_publish(const char *path, const char *node_url, bool json_out)
{
    ms_diag_t d;
    ms_diag_clear(&d);
    char *text = NULL;
    size_t n = 0;
    int rc = ms_cli_read_file(path, &text, &n, &d);
    if (rc != MS_OK)
        return ms_cli_diag_exit(&d, rc, path);
    const char *url = ms_cli_node_url(node_url);
    long status = 0;
    char *body = NULL;
    rc = ms_cli_http("POST", url, "/api/v1/authority", "text/plain", text, n,
                     &status, &body, &d);
    free(text);
    int code = MS_CLI_EXIT_OK;
    if (rc != MS_OK)
        code = ms_cli_diag_exit(&d, rc, url);
    else if (status < 200 || status > 299) {
        code = ms_cli_http_error(status, body, path, &d);
        fprintf(stderr, "meshsweep: %s: refused by %s: %s\n", path, url,
                d.reason);
    } else if (json_out)
        printf("%s\n", body ? body : "{}");
    else {
        json_error_t err;
        json_t *doc = body ? json_loads(body, 0, &err) : NULL;
        printf("%s published to %s (digest %.16s, %s)\n", path, url,
               json_string_value(json_object_get(doc, "digest"))
                   ? json_string_value(json_object_get(doc, "digest"))
                   : "?",
               json_is_true(json_object_get(doc, "new")) ? "new there"
                                                         : "known there");
        json_decref(doc);
    }
    free(body);
    return code;
}

//  --------------------------------------------------------------------------
//  Help for meshsweep pool publish.

static void
s_publish_usage(FILE *out)
{
    fprintf(out,
            "usage: meshsweep pool publish FILE [--node URL] [--json]\n"
            "\n"
            "Hand an authority item (a revocation written by `meshsweep pool "
            "revoke`)\nor a certificate bundle to a node of the pool (POST "
            "/api/v1/authority):\nthe node checks its signature and pool, "
            "keeps it, applies it and gossips\nit to every node at once. "
            "A forged or altered item is refused (exit 2).\n"
            "\n"
            "  --node URL     the node's API (default $MESHSWEEP_NODE or "
            "http://127.0.0.1:5872)\n"
            "  --json         print the node's answer as JSON\n");
}

//  --------------------------------------------------------------------------
//  meshsweep pool publish

static int
s_publish_main(int argc, char **argv)
{
    if (ms_cli_wants_help(argc, argv))
        return s_publish_usage(stdout), MS_CLI_EXIT_OK;
    const char *file = NULL, *node_url = NULL;
    bool json_out = false;
    for (int i = 1; i < argc; i++) {
        int rc_arg = MS_CLI_EXIT_OK;
        if (ms_cli_connection_arg(argc, argv, &i, &node_url, &rc_arg)) {
            if (rc_arg != MS_CLI_EXIT_OK)
                return rc_arg;
            if (node_url && !*node_url)
                return ms_cli_usage_error("--node", "needs a URL");
        } else if (strcmp(argv[i], "--json") == 0)
            json_out = true;
        else if (argv[i][0] == '-' && argv[i][1])
            return ms_cli_usage_error(argv[i],
                                      "unknown option of pool publish");
        else if (file)
            return ms_cli_usage_error(argv[i], "unexpected argument");
        else
            file = argv[i];
    }
    if (!file)
        return ms_cli_usage_error(
            "pool publish", "missing FILE (meshsweep pool publish --help)");
    return s_publish(file, node_url, json_out);
}

//  ---- pool show ---------------------------------------------------------

//  --------------------------------------------------------------------------
//  Help for meshsweep pool show.

static void
s_show_usage(FILE *out)
{
    fprintf(out,
            "usage: meshsweep pool show FILE [--json]\n"
            "\n"
            "Print a certificate file's fields (pool, node, operator, roles, "
            "expiry,\nissuer, serial) and whether it is valid, and why not; "
            "or those of an\nenrollment kit (never its secret) or a "
            "revocation file. Exit code 0 when valid, 1 when the "
            "file is well formed but not\nvalid (bad signature, expired, "
            "another pool), 2 when it is not such a file.\n"
            "\n"
            "  --json         print the fields and {valid, reason} as JSON\n");
}

//  --------------------------------------------------------------------------
//  meshsweep pool show

static int
s_show_main(int argc, char **argv)
{
    if (ms_cli_wants_help(argc, argv))
        return s_show_usage(stdout), MS_CLI_EXIT_OK;
    const char *file = NULL;
    bool json_out = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json_out = true;
        else if (argv[i][0] == '-' && argv[i][1])
            return ms_cli_usage_error(argv[i], "unknown option of pool show");
        else if (file)
            return ms_cli_usage_error(argv[i], "unexpected argument");
        else
            file = argv[i];
    }
    if (!file)
        return ms_cli_usage_error("pool show", "missing FILE (see meshsweep "
                                               "pool show --help)");
    if (sodium_init() < 0)
        return ms_cli_failure("libsodium", "cannot initialise");
    char *text = NULL;
    ms_diag_t d;
    ms_diag_clear(&d);
    if (ms_cli_read_file(file, &text, NULL, &d) != MS_OK)
        return ms_cli_usage_error(file, "%s", d.reason);
    bool is_item = strncmp(text, "meshsweep-authority-item-v1 ", 28) == 0;
    bool is_kit = strncmp(text, "meshsweep-enroll-v1 ", 20) == 0;
    sodium_memzero(text, strlen(text)); // a kit holds a secret
    free(text);

    json_t *doc = NULL;
    int rc;
    if (is_item) {
        ms_authority_item_t *it = calloc(1, sizeof *it);
        if (!it)
            return ms_cli_failure(file, "out of memory");
        rc = ms_authority_item_load(file, it, &d);
        if (rc == MS_OK || rc == MS_ERR_BADSIG || rc == MS_ERR_UNTRUSTED)
            doc = s_item_json(it);
        free(it);
    } else if (is_kit) {
        // The enrollment key's certificate; its secret is never printed.
        uint8_t auth_pk[MS_CERT_KEY_BYTES];
        uint8_t *esk = sodium_malloc(MS_CERT_SECRET_BYTES);
        ms_cert_t c;
        memset(&c, 0, sizeof c);
        rc = esk ? ms_cert_enroll_load(file, auth_pk, esk, &c,
                                       (int64_t) time(NULL), &d)
                 : MS_ERR_NOMEM;
        if (esk)
            sodium_free(esk);
        if (rc == MS_OK || rc == MS_ERR_BADSIG || rc == MS_ERR_UNTRUSTED ||
            rc == MS_ERR_EXPIRED) {
            doc = s_cert_json(&c);
            if (doc) {
                json_object_set(doc, "enroll_key",
                                json_object_get(doc, "node_id"));
                json_object_del(doc, "node_id");
            }
        }
    } else {
        uint8_t auth_pk[MS_CERT_KEY_BYTES];
        ms_cert_chain_t chain;
        rc = ms_cert_bundle_load(file, auth_pk, &chain, (int64_t) time(NULL),
                                 &d);
        // A chain that decoded is shown even when it does not verify.
        if (rc == MS_OK || rc == MS_ERR_BADSIG || rc == MS_ERR_UNTRUSTED ||
            rc == MS_ERR_EXPIRED) {
            doc = s_cert_json(&chain.leaf);
            if (doc) {
                char hex[S_KEY_HEX + 1];
                s_hex(auth_pk, MS_CERT_KEY_BYTES, hex);
                json_object_set_new(doc, "authority_key", json_string(hex));
                if (chain.has_enroller) {
                    s_hex(chain.enroller.subject, MS_CERT_KEY_BYTES, hex);
                    json_object_set_new(doc, "enroll_key", json_string(hex));
                }
            }
        }
    }
    if (!doc) {
        if (rc == MS_ERR_NOMEM || rc == MS_OK)
            return ms_cli_failure(file, "out of memory");
        ms_cli_diag_exit(&d, rc, file);
        return rc == MS_ERR_IO ? MS_CLI_EXIT_FAILURE : MS_CLI_EXIT_USAGE;
    }
    char reason[MS_DIAG_REASON_MAX] = "";
    if (rc != MS_OK)
        snprintf(reason, sizeof reason, "%s", d.reason);
    json_object_set_new(doc, "valid", json_boolean(rc == MS_OK));
    json_object_set_new(doc, "reason",
                        rc == MS_OK ? json_null() : json_string(reason));
    int code = MS_CLI_EXIT_OK;
    if (json_out)
        code = ms_cli_json_print(stdout, doc);
    else {
        const char *keys[] = {
            "kind",       "pool_id",       "node_id", "subject",   "operator",
            "roles",      "max_workers",   "expires", "issued_at", "issuer",
            "enroll_key", "authority_key", "serial",  "cut"};
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
            json_t *v = json_object_get(doc, keys[k]);
            if (!v)
                continue;
            char *s = json_is_string(v)
                          ? strdup(json_string_value(v))
                          : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            printf("%-14s %s\n", keys[k], s ? s : "?");
            free(s);
        }
        printf("%-14s %s%s%s\n", "valid", rc == MS_OK ? "yes" : "no",
               rc == MS_OK ? "" : ": ", reason);
    }
    json_decref(doc);
    if (code == MS_CLI_EXIT_OK && rc != MS_OK)
        code = MS_CLI_EXIT_FAILURE;
    return code;
}

//  ---- meshsweep pool ----------------------------------------------------

//  One pool subcommand.
typedef struct {
    const char *name;                      // as typed
    int (*main_fn)(int argc, char **argv); // entry point
    const char *summary;                   // one line for the overview
} s_subcommand_t;

static const s_subcommand_t s_subcommands[] = {
    {"init", s_init_main, "make a pool authority (keep it offline)"},
    {"invite", s_invite_main, "sign a certificate for a node id"},
    {"join", s_join_main, "install a certificate in a node's data dir"},
    {"enroll", s_enroll_main, "make an enrollment key for a cluster"},
    {"revoke", s_revoke_main, "sign a revocation of a node"},
    {"clear", s_clear_main, "sign a quarantine clear of a node"},
    {"publish", s_publish_main, "hand a revocation or certificate to a node"},
    {"show", s_show_main, "print a certificate or revocation file"},
};

//  --------------------------------------------------------------------------
//  Help for meshsweep pool.

static void
s_pool_usage(FILE *out)
{
    fprintf(out, "usage: meshsweep pool SUBCOMMAND [OPTIONS]\n"
                 "\n"
                 "The pool's authority, certificates, enrollment keys and "
                 "revocations\n(docs/TRUST.md). Works on files; no node is "
                 "needed.\n"
                 "\n"
                 "subcommands:\n");
    for (size_t i = 0; i < sizeof s_subcommands / sizeof *s_subcommands; i++)
        fprintf(out, "  %-8s %s\n", s_subcommands[i].name,
                s_subcommands[i].summary);
    fprintf(out, "\nmeshsweep pool SUBCOMMAND --help for its options.\n");
}

//  --------------------------------------------------------------------------
//  meshsweep pool SUBCOMMAND ...

int
ms_cli_pool_main(int argc, char **argv)
{
    if (argc < 2)
        return ms_cli_usage_error("pool",
                                  "missing SUBCOMMAND (meshsweep pool --help)");
    const char *sub = argv[1];
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 ||
        strcmp(sub, "help") == 0)
        return s_pool_usage(stdout), MS_CLI_EXIT_OK;
    for (size_t i = 0; i < sizeof s_subcommands / sizeof *s_subcommands; i++)
        if (strcmp(sub, s_subcommands[i].name) == 0)
            return s_subcommands[i].main_fn(argc - 1, argv + 1);
    return ms_cli_usage_error(sub, "unknown pool subcommand (try meshsweep "
                                   "pool --help)");
}
