/* The Ember C API from plain C, built against an installed SDK:
 *   gcc main.c $(pkg-config --cflags --libs ember) -lm -o c_app
 * Runs a .pte on a float32 input .npy and checks output 0 against a reference .npy.
 * Usage: c_app MODEL.pte INPUT.npy REFERENCE.npy [MAX_REL_L2 (default 1e-4)]
 * Exit status: 0 match, 1 mismatch or error, 2 usage. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extension/c/ember_c.h"

#define MAX_RANK 8

typedef struct {
  int64_t sizes[MAX_RANK];
  size_t rank;
  float* data;
  size_t count;
} Array;

/* Reads a little-endian, C-order float32 .npy (format 1.x or 2.x). Returns 0 on success. */
static int read_npy_f32(const char* path, Array* out) {
  FILE* f = fopen(path, "rb");
  if (!f) return fprintf(stderr, "cannot open %s\n", path), 1;
  unsigned char pre[12];
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0 || pre[6] < 1 || pre[6] > 2) {
    fclose(f);
    return fprintf(stderr, "%s is not a .npy file (version 1 or 2)\n", path), 1;
  }
  size_t hlen = (size_t)pre[8] | ((size_t)pre[9] << 8);
  if (pre[6] == 2) {
    if (fread(pre + 10, 1, 2, f) != 2) return fclose(f), fprintf(stderr, "%s: truncated header\n", path), 1;
    hlen |= ((size_t)pre[10] << 16) | ((size_t)pre[11] << 24);
  }
  if (hlen > 65536) return fclose(f), fprintf(stderr, "%s: header too long\n", path), 1;
  char* header = calloc(hlen + 1, 1);
  if (!header || fread(header, 1, hlen, f) != hlen) {
    free(header);
    fclose(f);
    return fprintf(stderr, "%s: truncated header\n", path), 1;
  }
  int ok = strstr(header, "'descr': '<f4'") && strstr(header, "'fortran_order': False");
  const char* shape = strstr(header, "'shape': (");
  out->rank = 0;
  out->count = 1;
  if (ok && shape) {
    const char* p = shape + 10;
    while (*p && *p != ')') {
      char* end;
      long long v = strtoll(p, &end, 10);
      if (end == p) { ++p; continue; }
      if (v < 0 || out->rank == MAX_RANK) { ok = 0; break; }
      out->sizes[out->rank++] = v;
      out->count *= (size_t)v;
      p = end;
    }
  }
  free(header);
  if (!ok || !shape) return fclose(f), fprintf(stderr, "%s: only little-endian C-order float32 .npy is read here\n", path), 1;
  out->data = malloc(out->count * sizeof(float) + 1);
  if (!out->data || fread(out->data, sizeof(float), out->count, f) != out->count) {
    fclose(f);
    return fprintf(stderr, "%s: truncated data\n", path), 1;
  }
  fclose(f);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    fprintf(stderr, "usage: %s MODEL.pte INPUT.npy REFERENCE.npy [MAX_REL_L2]\n", argv[0]);
    return 2;
  }
  double tolerance = argc > 4 ? atof(argv[4]) : 1e-4;
  Array input, ref;
  if (read_npy_f32(argv[2], &input) || read_npy_f32(argv[3], &ref)) return 1;

  EmberModule* m = NULL;
  EmberTensorView out;
  if (ember_module_open(argv[1], &m) != EMBER_OK ||
      ember_module_set_input(m, "forward", 0, EMBER_FLOAT32, input.sizes, input.rank, input.data,
                             input.count * sizeof(float)) != EMBER_OK ||
      ember_module_execute(m, "forward") != EMBER_OK || ember_module_output(m, "forward", 0, &out) != EMBER_OK) {
    fprintf(stderr, "%s\n", ember_last_error());
    ember_module_close(m);
    return 1;
  }
  if (out.dtype != EMBER_FLOAT32 || out.nbytes != ref.count * sizeof(float)) {
    fprintf(stderr, "output 0 (%zu bytes) does not match the reference (%zu float32 values)\n", out.nbytes, ref.count);
    ember_module_close(m);
    return 1;
  }
  const float* a = (const float*)out.data;
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.count; ++i) {
    double d = (double)a[i] - ref.data[i];
    num += d * d;
    den += (double)ref.data[i] * ref.data[i];
  }
  double rel_l2 = sqrt(num) / (sqrt(den) > 1e-12 ? sqrt(den) : 1e-12);
  int match = rel_l2 <= tolerance;
  printf("ember %s (C API): %s output 0: %zu values, rel. L2 %.3g (max %.3g): %s\n", ember_version(), argv[1],
         ref.count, rel_l2, tolerance, match ? "MATCH" : "MISMATCH");
  ember_module_close(m);
  free(input.data);
  free(ref.data);
  return match ? 0 : 1;
}
