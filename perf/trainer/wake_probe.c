// Build and run: gcc -O2 -pthread -o /tmp/wake_probe perf/trainer/wake_probe.c && /tmp/wake_probe 0; /tmp/wake_probe 1
// (perf/trainer/README.md, ninth pass; time it under /work/measure.lock)
// Wake-up latency of a thread on a core that a busy thread (same process, same nice) holds.
// mode 0: the waiter sleeps on a futex at once; mode 1: it polls with sched_yield for up to
// 200 us first (chorus's oversubscribed wait), then sleeps. The waker, on the other core,
// stamps the time and sets the flag (and futex-wakes) every 3 ms. Latency = stamp -> seen.
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static _Atomic long flag, stamp; static _Atomic int stop; static int mode;
static long now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000L+t.tv_nsec;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
static void*busy(void*a){pin(0);volatile double x=1;while(!stop)x=x*1.0000001+1e-9;return 0;}
#define N 600
static long lat[N];
static int cmp(const void*a,const void*b){long x=*(long*)a,y=*(long*)b;return x<y?-1:x>y;}
static void*waiter(void*a){pin(0);for(int i=0;i<N;i++){long t0=now();
  while(!atomic_load(&flag)){ if(mode==1&&now()-t0<200000){sched_yield();continue;}
    syscall(SYS_futex,&flag,FUTEX_WAIT_PRIVATE,0,0,0,0);}
  lat[i]=now()-atomic_load(&stamp);atomic_store(&flag,0);}return 0;}
int main(int c,char**v){mode=atoi(v[1]);pthread_t b,w;pthread_create(&b,0,busy,0);pthread_create(&w,0,waiter,0);
  pin(1);usleep(20000);for(int i=0;i<N;i++){usleep(3000);while(atomic_load(&flag))usleep(100);
    atomic_store(&stamp,now());atomic_store(&flag,1);syscall(SYS_futex,&flag,FUTEX_WAKE_PRIVATE,1,0,0,0);}
  pthread_join(w,0);stop=1;pthread_join(b,0);qsort(lat,N,sizeof(long),cmp);
  printf("mode %d (%s): wake->run us p10 %.0f p50 %.0f p90 %.0f p99 %.0f\n",mode,mode?"yield-poll 200us then futex":"futex at once",
    lat[N/10]/1e3,lat[N/2]/1e3,lat[N*9/10]/1e3,lat[N*99/100]/1e3);return 0;}
