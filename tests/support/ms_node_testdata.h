/*  =========================================================================
    ms_node_testdata - helpers for the node tests: a temp dir with a tiny
    synthetic "fashion-mnist" (IDX gz files), specs, polling a node

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Header-only (static functions) so each test executable stays one file.
    The data: 600 train and 100 test 28x28 images of 10 classes; class k
    lights a 7-pixel-wide band at a class-dependent place over noise, so a
    small MLP learns it in an epoch or two. Files are written as Debian's
    package names them, in DIR/fashion-mnist/, and MESHSWEEP_DATASETS_DIR
    is pointed at DIR, so the built-in name resolves to them.
*/
#ifndef MS_NODE_TESTDATA_H
#define MS_NODE_TESTDATA_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "ms_be.h"

//  --------------------------------------------------------------------------
//  Write one IDX images + labels pair (gz) of n samples; 0 on success.

static inline int
ms_td_write_pair(const char *images, const char *labels, int n, uint32_t seed)
{
    gzFile gi = gzopen(images, "wb");
    gzFile gl = gzopen(labels, "wb");
    if (!gi || !gl)
        return -1;
    uint8_t head[16];
    ms_be_put32(head, 0x00000803);
    ms_be_put32(head + 4, (uint32_t) n);
    ms_be_put32(head + 8, 28);
    ms_be_put32(head + 12, 28);
    gzwrite(gi, head, 16);
    ms_be_put32(head, 0x00000801);
    ms_be_put32(head + 4, (uint32_t) n);
    gzwrite(gl, head, 8);
    uint32_t s = seed;
    uint8_t img[784];
    for (int i = 0; i < n; i++) {
        uint8_t label = (uint8_t) (i % 10);
        for (int p = 0; p < 784; p++) {
            s = s * 1664525u + 1013904223u;
            img[p] = (uint8_t) (s >> 26); // noise 0..63
        }
        for (int r = 0; r < 28; r++)
            for (int c = 0; c < 7; c++) {
                int col = (label * 2 + c) % 28;
                int row = (r + label) % 28;
                img[row * 28 + col] = 200 + (uint8_t) (c * 5);
            }
        gzwrite(gi, img, 784);
        gzwrite(gl, &label, 1);
    }
    gzclose(gi);
    gzclose(gl);
    return 0;
}

//  --------------------------------------------------------------------------
//  Make ROOT (from a template) with ROOT/data/fashion-mnist/ and point
//  MESHSWEEP_DATASETS_DIR at ROOT/data. root must hold at least 256
//  bytes; 0 on success.

static inline int
ms_td_setup(char *root, size_t n)
{
    snprintf(root, n, "/tmp/ms_node_test.XXXXXX");
    if (!mkdtemp(root))
        return -1;
    char path[512], lab[512];
    snprintf(path, sizeof path, "%s/data", root);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/data/fashion-mnist", root);
    mkdir(path, 0700);
    snprintf(path, sizeof path,
             "%s/data/fashion-mnist/train-images-idx3-ubyte.gz", root);
    snprintf(lab, sizeof lab,
             "%s/data/fashion-mnist/train-labels-idx1-ubyte.gz", root);
    if (ms_td_write_pair(path, lab, 600, 7) != 0)
        return -1;
    snprintf(path, sizeof path,
             "%s/data/fashion-mnist/t10k-images-idx3-ubyte.gz", root);
    snprintf(lab, sizeof lab, "%s/data/fashion-mnist/t10k-labels-idx1-ubyte.gz",
             root);
    if (ms_td_write_pair(path, lab, 100, 99) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/data", root);
    setenv("MESHSWEEP_DATASETS_DIR", path, 1);
    return 0;
}

//  --------------------------------------------------------------------------
//  A test's root made fresh for each case: ms_td_root_setup (a cmocka
//  setup: ms_td_setup into ms_td_root) and ms_td_root_teardown (removes
//  it). One root per test executable, as the node tests use it.

static char ms_td_root[256] __attribute__((unused));

static inline int
ms_td_root_setup(void **state)
{
    (void) state;
    return ms_td_setup(ms_td_root, sizeof ms_td_root);
}

//  --------------------------------------------------------------------------
//  A free loopback TCP port (bound once, then closed for the caller to
//  use). Aborts the test when no port can be had.

static inline int
ms_td_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *) &a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *) &a, &len) != 0) {
        fprintf(stderr, "no free loopback port\n");
        abort();
    }
    close(fd);
    return ntohs(a.sin_port);
}

//  --------------------------------------------------------------------------
//  Remove ROOT and everything in it.

static inline void
ms_td_teardown(const char *root)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", root);
}

//  --------------------------------------------------------------------------
//  A spec text (static buffer): NAME, a grid of hidden_layers over
//  N_DEPTHS values 1..N_DEPTHS, width 8, EPOCHS epochs, seeds 1..N_SEEDS.

static inline const char *
ms_td_spec(const char *name, int n_depths, int n_seeds, int epochs)
{
    static char text[1024];
    char depths[128] = "", seeds[128] = "";
    for (int i = 1; i <= n_depths; i++)
        snprintf(depths + strlen(depths), sizeof depths - strlen(depths),
                 "%s%d", i > 1 ? ", " : "", i);
    for (int i = 1; i <= n_seeds; i++)
        snprintf(seeds + strlen(seeds), sizeof seeds - strlen(seeds), "%s%d",
                 i > 1 ? ", " : "", i);
    snprintf(text, sizeof text,
             "name: %s\n"
             "dataset: fashion-mnist\n"
             "method: grid\n"
             "parameters:\n"
             "  hidden_layers: {values: [%s]}\n"
             "  width: {value: 8}\n"
             "  epochs: {value: %d}\n"
             "  batch_size: {value: 100}\n"
             "  seed: {values: [%s]}\n",
             name, depths, epochs, seeds);
    return text;
}

//  --------------------------------------------------------------------------
//  Remove ms_td_root (a cmocka teardown; see ms_td_root_setup).

static inline int
ms_td_root_teardown(void **state)
{
    (void) state;
    ms_td_teardown(ms_td_root);
    return 0;
}

#endif
