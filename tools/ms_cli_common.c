/*  =========================================================================
    ms_cli_common - argument scanning, error lines, files and HTTP for the
    command-line client

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_cli.h"
#include "ms_dataset.h"
#include "ms_spec.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <limits.h>
#include <stdarg.h>
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

//  --------------------------------------------------------------------------
//  Print "meshsweep: WHERE: REASON" from a va_list.

static void
s_vprint_error(const char *where, const char *fmt, va_list ap)
{
    char reason[1024];
    vsnprintf(reason, sizeof reason, fmt, ap);
    // One line: newlines in a reason (from a server body) become spaces.
    for (char *p = reason; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    if (where && *where)
        fprintf(stderr, "meshsweep: %s: %s\n", where, reason);
    else
        fprintf(stderr, "meshsweep: %s\n", reason);
}

//  --------------------------------------------------------------------------
//  Report bad usage or bad input; exit code 2.

int
ms_cli_usage_error(const char *where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s_vprint_error(where, fmt, ap);
    va_end(ap);
    return MS_CLI_EXIT_USAGE;
}

//  --------------------------------------------------------------------------
//  Report a failure; exit code 1.

int
ms_cli_failure(const char *where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s_vprint_error(where, fmt, ap);
    va_end(ap);
    return MS_CLI_EXIT_FAILURE;
}

//  --------------------------------------------------------------------------
//  Map a status code to an exit code.

int
ms_cli_exit_code(int code)
{
    switch (code) {
    case MS_OK:
        return MS_CLI_EXIT_OK;
    case MS_ERR_INVALID:
    case MS_ERR_DATASET:
    case MS_ERR_RANGE:
    case MS_ERR_NOTFOUND:
    case MS_ERR_UNSUPPORTED:
        return MS_CLI_EXIT_USAGE;
    default:
        return MS_CLI_EXIT_FAILURE;
    }
}

//  --------------------------------------------------------------------------
//  Print a diag and return the exit code for its status code.

int
ms_cli_diag_exit(const ms_diag_t *diag, int code, const char *fallback)
{
    const char *where = diag && diag->where[0] ? diag->where : fallback;
    const char *reason =
        diag && diag->reason[0] ? diag->reason : ms_strerror(code);
    if (where && *where)
        fprintf(stderr, "meshsweep: %s: %s\n", where, reason);
    else
        fprintf(stderr, "meshsweep: %s\n", reason);
    int rc = ms_cli_exit_code(code);
    return rc == MS_CLI_EXIT_OK ? MS_CLI_EXIT_FAILURE : rc;
}

//  --------------------------------------------------------------------------
//  Match "--name VALUE" or "--name=VALUE" at argv[*i].

bool
ms_cli_arg_value(int argc, char **argv, int *i, const char *name,
                 const char **value, bool *missing)
{
    const char *arg = argv[*i];
    size_t len = strlen(name);
    if (strncmp(arg, name, len) != 0)
        return false;
    if (arg[len] == '=') {
        *value = arg + len + 1;
        return true;
    }
    if (arg[len] != '\0')
        return false;
    if (*i + 1 >= argc) {
        *missing = true;
        return true;
    }
    *i += 1;
    *value = argv[*i];
    return true;
}

//  --------------------------------------------------------------------------
//  One of a command's string options at argv[*i].

bool
ms_cli_value_option(int argc, char **argv, int *i,
                    const ms_cli_value_opt_t *opts, size_t n, int *exit_code)
{
    for (size_t k = 0; k < n; k++) {
        bool missing = false;
        const char *v = NULL;
        if (!ms_cli_arg_value(argc, argv, i, opts[k].name, &v, &missing))
            continue;
        if (missing)
            *exit_code = ms_cli_usage_error(opts[k].name, "needs a value");
        else
            *opts[k].slot = v;
        return true;
    }
    return false;
}

//  --------------------------------------------------------------------------
//  The connection options: --node, --token, --token-file.

bool
ms_cli_connection_arg(int argc, char **argv, int *i, const char **node_url,
                      int *exit_code)
{
    static const struct {
        const char *name; // the option
        const char *what; // what its value must be
    } opts[] = {{"--node", "needs a URL"},
                {"--token", "needs a token"},
                {"--token-file", "needs a file"}};
    for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
        bool missing = false;
        const char *v = NULL;
        if (!ms_cli_arg_value(argc, argv, i, opts[k].name, &v, &missing))
            continue;
        if (missing) {
            *exit_code = ms_cli_usage_error(opts[k].name, "%s", opts[k].what);
            return true;
        }
        if (k == 0)
            *node_url = v;
        else if (k == 1)
            ms_cli_set_token(v);
        else
            ms_cli_set_token_file(v);
        *exit_code = MS_CLI_EXIT_OK;
        return true;
    }
    return false;
}

//  --------------------------------------------------------------------------
//  The analysis options: --x, --metric.

bool
ms_cli_analysis_arg(int argc, char **argv, int *i, const char **x,
                    const char **metric, bool *analyze, int *rc)
{
    bool missing = false;
    *rc = MS_CLI_EXIT_OK;
    const char **into = NULL;
    const char *v = NULL;
    if (ms_cli_arg_value(argc, argv, i, "--x", &v, &missing))
        into = x;
    else if (ms_cli_arg_value(argc, argv, i, "--metric", &v, &missing))
        into = metric;
    else
        return false;
    if (missing)
        *rc = ms_cli_usage_error(into == x ? "--x" : "--metric",
                                 into == x ? "needs a parameter name"
                                           : "needs a metric name");
    else {
        *into = v;
        *analyze = true;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  Parse a bounded decimal integer option value.

int
ms_cli_parse_int(const char *name, const char *text, long min, long max,
                 long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end != '\0') {
        ms_cli_usage_error(name, "'%s' is not an integer", text);
        return MS_ERR_INVALID;
    }
    if (v < min || v > max) {
        ms_cli_usage_error(name, "%ld is out of range [%ld, %ld]", v, min, max);
        return MS_ERR_INVALID;
    }
    *out = v;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  True when the command line asks for help.

bool
ms_cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    }
    return false;
}

//  --------------------------------------------------------------------------
//  Print the version line.

void
ms_cli_print_version(void)
{
    printf("meshsweep %s\n", MESHSWEEP_VERSION);
}

//  --------------------------------------------------------------------------
//  Read a whole file into memory.

int
ms_cli_read_file(const char *path, char **text, size_t *n, ms_diag_t *diag)
{
    *text = NULL;
    if (n)
        *n = 0;
    //  A file the user named that is missing, unreadable or a directory
    //  is bad input (exit 2), like a malformed one; other failures are
    //  failures (exit 1).
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        bool user = e == ENOENT || e == EACCES || e == ENOTDIR || e == EISDIR;
        return ms_diag_set_code(diag, user ? MS_ERR_INVALID : MS_ERR_IO, path,
                                "cannot open: %s", strerror(e));
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        return ms_diag_set_code(diag, MS_ERR_INVALID, path,
                                "is a directory, not a file");
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return MS_ERR_NOMEM;
    }
    for (;;) {
        if (len + 1 >= cap) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                fclose(f);
                return MS_ERR_NOMEM;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0)
            break;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        int e = errno;
        free(buf);
        return ms_diag_set_code(diag, MS_ERR_IO, path, "read failed: %s",
                                strerror(e));
    }
    buf[len] = '\0';
    *text = buf;
    if (n)
        *n = len;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Split a spec file into the texts of its sweeps.

int
ms_cli_spec_docs(const char *path, const char *text, size_t n,
                 ms_cli_spec_doc_t **docs, size_t *n_docs)
{
    *docs = NULL;
    *n_docs = 0;
    ms_diag_t diag;
    ms_spec_document_t *ranges = NULL;
    size_t count = 0;
    int rc = ms_spec_split_documents(text, n, &ranges, &count, &diag);
    if (rc != MS_OK) {
        if (rc == MS_ERR_NOMEM)
            return ms_cli_failure(path, "out of memory");
        char where[MS_DIAG_WHERE_MAX + PATH_MAX + 32];
        return ms_cli_usage_error(
            ms_cli_spec_where(where, sizeof where, path, 1, 1, diag.where),
            "%s", diag.reason);
    }
    ms_cli_spec_doc_t *out = calloc(count, sizeof *out);
    for (size_t i = 0; out && i < count; i++) {
        out[i].number = ranges[i].number;
        if (count == 1) {
            out[i].text = malloc(n + 1);
            if (out[i].text) {
                memcpy(out[i].text, text, n);
                out[i].text[n] = '\0';
                out[i].n = n;
            }
        } else
            out[i].text = ms_spec_document_text(text, &ranges[i], &out[i].n);
        if (!out[i].text)
            ms_cli_spec_docs_destroy(&out, count);
    }
    free(ranges);
    if (!out)
        return ms_cli_failure(path, "out of memory");
    *docs = out;
    *n_docs = count;
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  Free the documents of a spec file.

void
ms_cli_spec_docs_destroy(ms_cli_spec_doc_t **docs_p, size_t n_docs)
{
    if (!docs_p || !*docs_p)
        return;
    for (size_t i = 0; i < n_docs; i++)
        free((*docs_p)[i].text);
    free(*docs_p);
    *docs_p = NULL;
}

//  --------------------------------------------------------------------------
//  Where an error of document number (of n_docs) of a spec file is.

const char *
ms_cli_spec_where(char *out, size_t size, const char *path, size_t number,
                  size_t n_docs, const char *key)
{
    char doc[48] = "";
    if (n_docs > 1)
        snprintf(doc, sizeof doc, ": document %zu", number);
    bool with_key = key && key[0] && strcmp(key, path) != 0;
    snprintf(out, size, "%s%s%s%s", path, doc, with_key ? ": " : "",
             with_key ? key : "");
    return out;
}

//  --------------------------------------------------------------------------
//  The largest validation_split of the spec's tasks (it leaves the fewest
//  training rows, so it is the one to check), read from the canonical
//  task texts: a key lookup, no full decode, as this runs over up to a
//  million tasks. 0 when no task has one.

static double
s_worst_split(const ms_spec_t *spec)
{
    static const char key[] = "\"validation_split\":";
    double worst = 0.0;
    for (size_t i = 0; i < ms_spec_task_count(spec); i++) {
        const char *text = ms_spec_task_json(spec, i);
        const char *at = text ? strstr(text, key) : NULL;
        if (!at)
            continue;
        double f = strtod(at + sizeof key - 1, NULL);
        if (!(f <= worst))
            worst = f;
    }
    return worst;
}

//  --------------------------------------------------------------------------
//  Load and check a spec's dataset in this process (what run and submit
//  do before anything is stored or sent).

int
ms_cli_spec_check_dataset(const ms_spec_t *spec, bool builtin, ms_diag_t *diag)
{
    const ms_spec_dataset_t *ds = ms_spec_dataset(spec);
    if (ds->builtin && !builtin)
        return MS_OK;
    ms_dataset_t *train = NULL, *test = NULL;
    int rc;
    const char *train_name = ds->builtin ? ds->name : ds->train_path;
    const char *test_name = ds->builtin ? ds->name : ds->test_path;
    char *train_labels = NULL, *test_labels = NULL;
    if (ds->builtin)
        rc = ms_dataset_load_builtin(ds->name, &train, &test, diag);
    else if (ms_dataset_idx_pair(ds->train_path, ds->test_path, &train_labels,
                                 &test_labels)) {
        //  An IDX pair for each part, its labels file found as the
        //  workers find it.
        rc = ms_dataset_load_idx(&train, ds->train_path, train_labels, diag);
        if (rc == MS_OK)
            rc = ms_dataset_load_idx(&test, ds->test_path, test_labels, diag);
    } else {
        //  CSV files with the spec's options, so classes, categories and
        //  a split are what the workers will see.
        ms_dataset_csv_options_t o;
        ms_spec_dataset_csv_options(spec, &o);
        rc = ms_dataset_load_csv_files(ds->train_path, ds->test_path, &o,
                                       &train, &test, diag);
    }
    if (rc == MS_OK)
        rc = ms_dataset_check(train, train_name, 0, diag);
    if (rc == MS_OK)
        rc = ms_dataset_check(test, test_name, train->n_classes, diag);
    if (rc == MS_OK && train->n_features != test->n_features)
        rc = ms_diag_set_code(diag, MS_ERR_DATASET, test_name,
                              "%d features, the training set has %d",
                              (int) test->n_features, (int) train->n_features);
    //  A validation_split that leaves no training row is refused here,
    //  naming the key, rather than failing every task with "invalid
    //  input".
    if (rc == MS_OK)
        rc = ms_dataset_split_check(train, s_worst_split(spec), diag);
    ms_dataset_destroy(&train);
    ms_dataset_destroy(&test);
    free(train_labels);
    free(test_labels);
    return rc;
}

//  Bearer token given with --token (NULL: $MESHSWEEP_TOKEN).
static const char *s_token = NULL;

//  --------------------------------------------------------------------------
//  Use a bearer token for the next HTTP requests.

void
ms_cli_set_token(const char *token)
{
    s_token = token;
}

//  Token file given with --token-file (NULL: $MESHSWEEP_TOKEN_FILE).
static const char *s_token_file = NULL;

//  --------------------------------------------------------------------------
//  Read the bearer token from a file when no token is given.

void
ms_cli_set_token_file(const char *path)
{
    s_token_file = path;
}

//  --------------------------------------------------------------------------
//  The token from the token file (first line, blanks trimmed) into out.

static int
s_read_token_file(const char *path, char *out, size_t n, ms_diag_t *diag)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return ms_diag_set_code(diag, MS_ERR_IO, path,
                                "cannot read the token file: %s",
                                strerror(errno));
    char line[1024] = "";
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    size_t len = strcspn(p, " \t\r\n");
    if (!got || len == 0 || len >= n)
        return ms_diag_set_code(diag, MS_ERR_IO, path,
                                "no token on the first line");
    memcpy(out, p, len);
    out[len] = 0;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  The bearer token in use.

int
ms_cli_token(const char **token, ms_diag_t *diag)
{
    static char file_token[512]; // the CLI is single-threaded
    *token = s_token ? s_token : getenv("MESHSWEEP_TOKEN");
    if (*token && **token)
        return MS_OK;
    *token = NULL;
    const char *path =
        s_token_file ? s_token_file : getenv("MESHSWEEP_TOKEN_FILE");
    if (!path || !*path)
        return MS_OK;
    int rc = s_read_token_file(path, file_token, sizeof file_token, diag);
    if (rc == MS_OK)
        *token = file_token;
    return rc;
}

//  --------------------------------------------------------------------------
//  Node API base URL from option, environment or default.

const char *
ms_cli_node_url(const char *option)
{
    if (option && *option)
        return option;
    const char *env = getenv("MESHSWEEP_NODE");
    if (env && *env)
        return env;
    return MS_CLI_DEFAULT_NODE;
}

//  A growing response buffer for libcurl's write callback.
typedef struct {
    char *data;  // NUL-terminated body so far
    size_t size; // bytes in data
    bool failed; // out of memory
} s_buffer_t;

//  --------------------------------------------------------------------------
//  libcurl write callback: append to the buffer.

static size_t
s_write_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
    s_buffer_t *buf = arg;
    size_t n = size * nmemb;
    char *bigger = realloc(buf->data, buf->size + n + 1);
    if (!bigger) {
        buf->failed = true;
        return 0;
    }
    buf->data = bigger;
    memcpy(buf->data + buf->size, ptr, n);
    buf->size += n;
    buf->data[buf->size] = '\0';
    return n;
}

//  --------------------------------------------------------------------------
//  One HTTP request to the node API, the body's length in *n_response.

int
ms_cli_http_bytes(const char *method, const char *base_url, const char *path,
                  const char *content_type, const char *body, size_t n_body,
                  long *status, char **response, size_t *n_response,
                  ms_diag_t *diag)
{
    *response = NULL;
    *n_response = 0;
    *status = 0;
    static bool s_initialised = false;
    if (!s_initialised) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return ms_diag_set_code(diag, MS_ERR_HTTP, base_url,
                                    "cannot initialise libcurl");
        s_initialised = true;
    }
    size_t base_len = strlen(base_url);
    while (base_len > 0 && base_url[base_len - 1] == '/')
        base_len--;
    size_t url_len = base_len + strlen(path) + 1;
    char *url = malloc(url_len);
    if (!url)
        return MS_ERR_NOMEM;
    snprintf(url, url_len, "%.*s%s", (int) base_len, base_url, path);

    int rc = MS_OK;
    struct curl_slist *headers = NULL;
    s_buffer_t buf = {.data = calloc(1, 1)};
    CURL *curl = curl_easy_init();
    if (!curl || !buf.data) {
        rc = MS_ERR_NOMEM;
        goto cleanup;
    }
    char header[1024];
    const char *token = NULL;
    rc = ms_cli_token(&token, diag);
    if (rc != MS_OK)
        goto cleanup;
    if (token && *token) {
        snprintf(header, sizeof header, "Authorization: Bearer %s", token);
        headers = curl_slist_append(headers, header);
    }
    if (body) {
        snprintf(header, sizeof header, "Content-Type: %s",
                 content_type ? content_type : "application/octet-stream");
        headers = curl_slist_append(headers, header);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t) n_body);
    }
    headers = curl_slist_append(headers, "Accept: application/json");
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, s_write_cb);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &buf);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 120000L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "meshsweep/" MESHSWEEP_VERSION);
    // Never go through a proxy to reach a node: the API is local or LAN.
    curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
    CURLcode cc = curl_easy_perform(curl);
    if (buf.failed) {
        rc = MS_ERR_NOMEM;
        goto cleanup;
    }
    if (cc != CURLE_OK) {
        rc = ms_diag_set_code(
            diag, MS_ERR_HTTP, url, "%s%s", curl_easy_strerror(cc),
            cc == CURLE_COULDNT_CONNECT ? " (is meshsweepd running? use --node "
                                          "URL or MESHSWEEP_NODE)"
                                        : "");
        goto cleanup;
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
    *response = buf.data;
    *n_response = buf.size;
    buf.data = NULL;
cleanup:
    free(buf.data);
    curl_slist_free_all(headers);
    if (curl)
        curl_easy_cleanup(curl);
    free(url);
    return rc;
}

//  --------------------------------------------------------------------------
//  One HTTP request to the node API.

int
ms_cli_http(const char *method, const char *base_url, const char *path,
            const char *content_type, const char *body, size_t n_body,
            long *status, char **response, ms_diag_t *diag)
{
    size_t n = 0;
    return ms_cli_http_bytes(method, base_url, path, content_type, body, n_body,
                             status, response, &n, diag);
}

//  --------------------------------------------------------------------------
//  Turn an API error answer into a diag and an exit code.

int
ms_cli_http_error(long status, const char *body, const char *what,
                  ms_diag_t *diag)
{
    int exit_code = (status == 400 || status == 404 || status == 409 ||
                     status == 413 || status == 422)
                        ? MS_CLI_EXIT_USAGE
                        : MS_CLI_EXIT_FAILURE;
    json_error_t jerr;
    json_t *doc = body ? json_loads(body, JSON_DECODE_ANY, &jerr) : NULL;
    const json_t *obj = doc;
    if (json_is_object(doc) && json_is_object(json_object_get(doc, "error")))
        obj = json_object_get(doc, "error");
    const char *where = json_string_value(json_object_get(obj, "where"));
    const char *reason = json_string_value(json_object_get(obj, "reason"));
    if (!reason)
        reason = json_string_value(json_object_get(obj, "message"));
    if (!reason)
        reason = json_string_value(json_object_get(doc, "error"));
    // The node names what it refused ("<sweep id>: no such sweep"); when
    // that is WHAT (or the full id of the prefix the user typed), say it
    // once, as typed: "meshsweep: 1a2b3c4d5e6f: no such sweep".
    const char *colon = reason && what && *what ? strstr(reason, ": ") : NULL;
    size_t n_what = what ? strlen(what) : 0;
    if (colon && !(where && *where) && (size_t) (colon - reason) >= n_what &&
        strncmp(reason, what, n_what) == 0 &&
        ((size_t) (colon - reason) == n_what ||
         strspn(reason, "0123456789abcdef") == (size_t) (colon - reason)))
        reason = colon + 2;
    if (status == 401) {
        // The node's own text speaks to curl and browsers; a CLI user
        // needs the CLI's ways to give the token.
        const char *token = NULL;
        ms_diag_t ignored;
        bool given = ms_cli_token(&token, &ignored) == MS_OK && token;
        ms_diag_set(diag, what,
                    "%s: give the node's API token with --token TOKEN, "
                    "--token-file FILE or $MESHSWEEP_TOKEN_FILE (or "
                    "$MESHSWEEP_TOKEN); it is in the node's "
                    "DATA_DIR/api-token, named in meshsweepd's start lines",
                    given ? "the node refused the token given"
                          : "the node's API listens beyond loopback and "
                            "needs its token");
    } else if (reason)
        ms_diag_set(diag, where && *where ? where : what, "%s", reason);
    else if (body && *body && !doc)
        ms_diag_set(diag, what, "HTTP %ld: %.200s", status, body);
    else
        ms_diag_set(diag, what, "HTTP %ld", status);
    json_decref(doc);
    return exit_code;
}

//  --------------------------------------------------------------------------
//  First 12 characters of a hex id.

void
ms_cli_short_id(const char *hex, char out[13])
{
    size_t n = 0;
    if (hex)
        for (; n < 12 && hex[n]; n++)
            out[n] = hex[n];
    out[n] = '\0';
}

//  --------------------------------------------------------------------------
//  Check a typed sweep id: 12..64 hex characters.

int
ms_cli_check_sweep_id(const char *text)
{
    size_t n = strlen(text);
    if (n < 12 || n > 64)
        return ms_cli_usage_error(
            text, "a sweep id is 64 hex characters (a unique prefix of 12 "
                  "or more is accepted)");
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char) text[i]))
            return ms_cli_usage_error(text, "not a hex sweep id");
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  One API exchange whose answer is JSON.

int
ms_cli_api_json(const char *method, const char *node, const char *path,
                const char *body, const char *what, json_t **doc)
{
    *doc = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    long status = 0;
    char *answer = NULL;
    int rc =
        ms_cli_http(method, node, path, body ? "application/json" : NULL, body,
                    body ? strlen(body) : 0, &status, &answer, &diag);
    if (rc != MS_OK)
        return ms_cli_diag_exit(&diag, rc, node);
    if (status < 200 || status > 299) {
        int code = ms_cli_http_error(status, answer, what, &diag);
        free(answer);
        ms_cli_diag_exit(&diag, MS_ERR_HTTP, what);
        return code;
    }
    json_error_t jerr;
    *doc = json_loads(answer, JSON_DECODE_ANY, &jerr);
    free(answer);
    if (!*doc)
        return ms_cli_failure(node, "%s: the node's answer is not JSON: %s",
                              path, jerr.text);
    return MS_CLI_EXIT_OK;
}
