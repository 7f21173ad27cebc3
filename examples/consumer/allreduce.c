/* The same with the C API. Run: chorus-run -n 4 ./allreduce_c */
#include <chorus/chorus.h>
#include <stdio.h>

int main(void) {
  chorusComm_t comm;
  int rank, n, i;
  int data[257];
  chorusResult_t rc = chorusCommInitEnv(&comm);
  if (rc != chorusSuccess) {
    fprintf(stderr, "init: %s: %s\n", chorusGetErrorString(rc), chorusGetLastError(NULL));
    return 1;
  }
  chorusCommUserRank(comm, &rank);
  chorusCommCount(comm, &n);
  for (i = 0; i < 257; ++i) data[i] = rank + i;
  rc = chorusAllReduce(data, data, 257, chorusInt32, chorusMax, comm);
  if (rc != chorusSuccess) {
    fprintf(stderr, "allreduce: %s\n", chorusGetLastError(comm));
    return 1;
  }
  for (i = 0; i < 257; ++i) {
    if (data[i] != n - 1 + i) {
      fprintf(stderr, "rank %d: wrong value at %d\n", rank, i);
      return 1;
    }
  }
  printf("rank %d/%d: ok\n", rank, n);
  chorusCommDestroy(comm);
  return 0;
}
