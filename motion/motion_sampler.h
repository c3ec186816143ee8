// motion_sampler.h: BeyondMimic's adaptive start sampling over every clip of a motion library (training.md
// §2b), as pure SIM_FN functions that compile as C and as CUDA device code. float64 throughout, serial loops:
// the same bits on the CPU and the GPU, no atomics, no dependence on how many worlds run.
//
// Bins. A clip of T frames at the control rate (1 / step_dt) has bins_c = floor(T / (1 / step_dt)) + 1 bins
// (mjlab's bin_count: ~1 s each); bin i of the clip covers frames [i T / bins_c, (i + 1) T / bins_c). One
// table holds every clip's bins, clip after clip (the 40 LAFAN1 clips at 50 Hz: 8,842 bins): bin0[c] is
// clip c's first bin, bin_clip[b] the clip of bin b.
//
// "bins" in the uniform term is the table's total B, not a clip's bins_c: mjlab's one-clip rule
// p_b ∝ fail_b + 0.1 / bins applied to the whole table gives p_b ∝ fail_b + 0.1 / B. The uniform floor then
// totals 0.1 as in mjlab, so with no failures every bin over all clips is equally likely (a clip is drawn in
// proportion to its bins, i.e. to its duration), and one bin's failures weigh against the whole table.
// Smoothing kernel size 1 (mjlab's default): none.
//
// Per control step (mjlab's order): the worlds that terminate (a fall, not a time-out) are counted in the bin
// holding their frame (motion_sampler_bin, motion_sampler_count); every step, failures or not,
// fail <- alpha * count + (1 - alpha) * fail (alpha = 0.001); the CDF is rebuilt; each world that resets
// draws a bin by binary search on a uniform and a start frame floor((i + U) / bins_c * (T_c - 1)) in it.
#ifndef ADJ_MOTION_SAMPLER_H
#define ADJ_MOTION_SAMPLER_H

#include "sim/sim_port.h"

#define MOTION_SAMPLER_ALPHA 0.001   // failure EMA rate per control step
#define MOTION_SAMPLER_UNIFORM 0.1   // total weight of the uniform floor (mjlab's adaptive_uniform_ratio)

// Bins of a clip of T >= 1 frames at control period step_dt (mjlab: T // (1 / step_dt) + 1).
SIM_FN int motion_sampler_clip_bins(int T, double step_dt) {
  return (int)floor((double)T / (1.0 / step_dt)) + 1;
}

// The table of nclip clips of clip_len frames: bin0 (nclip + 1 entries; bin0[nclip] is the total) and, unless
// NULL, bin_clip (total entries). Returns the total B. Call once with bin_clip NULL to size bin_clip.
SIM_FN int motion_sampler_table(int nclip, const int* clip_len, double step_dt, int* bin0, int* bin_clip) {
  int b = 0;
  for (int c = 0; c < nclip; c++) {
    int n = motion_sampler_clip_bins(clip_len[c], step_dt);
    bin0[c] = b;
    if (bin_clip)
      for (int i = 0; i < n; i++) bin_clip[b + i] = c;
    b += n;
  }
  bin0[nclip] = b;
  return b;
}

// The table's bin holding frame t of clip c: bin0[c] + clamp(t * bins_c / T_c, 0, bins_c - 1) (integer
// division, as mjlab's (time_steps * bin_count) // T).
SIM_FN int motion_sampler_bin(const int* clip_len, const int* bin0, int c, int t) {
  int n = bin0[c + 1] - bin0[c], T = clip_len[c] > 1 ? clip_len[c] : 1;
  long long i = (long long)t * n / T;
  if (i < 0) i = 0;
  if (i > n - 1) i = n - 1;
  return bin0[c] + (int)i;
}

// Failures of one step per bin: count[b] = the number of worlds w with fail_bin[w] == b (fail_bin < 0: the
// world did not fail). One serial pass.
SIM_FN void motion_sampler_count(const int* fail_bin, int nworld, int nbin, int* count) {
  for (int b = 0; b < nbin; b++) count[b] = 0;
  for (int w = 0; w < nworld; w++)
    if (fail_bin[w] >= 0 && fail_bin[w] < nbin) count[fail_bin[w]]++;
}

// The failure EMA, every control step: fail <- alpha * count + (1 - alpha) * fail.
SIM_FN void motion_sampler_update(double* fail, const int* count, int nbin, double alpha) {
  for (int b = 0; b < nbin; b++) fail[b] = alpha * (double)count[b] + (1 - alpha) * fail[b];
}

// Unnormalised CDF of p_b ∝ fail_b + uniform / nbin: cdf[b] = sum over j <= b (a serial prefix sum). Returns
// the total (cdf[nbin - 1]); p_b = (cdf[b] - cdf[b - 1]) / total.
SIM_FN double motion_sampler_cdf(const double* fail, int nbin, double uniform, double* cdf) {
  double floor_b = uniform / (double)nbin, s = 0;
  for (int b = 0; b < nbin; b++) {
    s += fail[b] + floor_b;
    cdf[b] = s;
  }
  return s;
}

// The bin of uniform u in [0, 1): the first b with cdf[b] > u * total (binary search).
SIM_FN int motion_sampler_pick(const double* cdf, int nbin, double u) {
  double x = u * cdf[nbin - 1];
  int lo = 0, hi = nbin - 1;  // the answer lies in [lo, hi]
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (cdf[mid] > x)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

// A start: the bin by u_bin, then frame floor((i + u_off) / bins_c * (T_c - 1)) of its clip, i the bin's index
// within the clip; u_bin, u_off uniform in [0, 1). Writes the clip and the frame within it.
SIM_FN void motion_sampler_draw(const double* cdf, int nbin, const int* bin_clip, const int* bin0, const int* clip_len,
                                double u_bin, double u_off, int* clip, int* frame) {
  int b = motion_sampler_pick(cdf, nbin, u_bin);
  int c = bin_clip[b], n = bin0[c + 1] - bin0[c], T = clip_len[c];
  int f = (int)floor(((double)(b - bin0[c]) + u_off) / (double)n * (double)(T - 1));
  if (f > T - 1) f = T - 1;
  if (f < 0) f = 0;
  *clip = c;
  *frame = f;
}

// ---- the same per step, lane-parallel: one CUDA block (lane = thread, nlane = the block's threads) or one CPU
// lane (0, 1) computes the same bits. Phases end with SIM_BLOCK_SYNC (the caller's barrier: __syncthreads on the
// device, nothing on the CPU); no atomics, no dependence on nlane. ----
#ifndef MOTION_SAMPLER_BLOCK_SYNC
#ifdef __CUDA_ARCH__
#define MOTION_SAMPLER_BLOCK_SYNC() __syncthreads()
#else
#define MOTION_SAMPLER_BLOCK_SYNC() ((void)0)
#endif
#endif
#define MOTION_SAMPLER_CHUNKS 256  // fixed chunks of the CDF's blocked prefix sum (4 doubles each of scratch)

// One step's counts and EMA: bin b belongs to lane b mod nlane, which counts the worlds failing in it (every lane
// reads every fail_bin, in world order) and updates its EMA with motion_sampler_update's formula.
SIM_FN void motion_sampler_step_lanes(const int* fail_bin, int nworld, int nbin, double alpha, int* count,
                                      double* fail, int lane, int nlane) {
  for (int b = lane; b < nbin; b += nlane) count[b] = 0;
  for (int w = 0; w < nworld; w++) {
    int b = fail_bin[w];
    if (b >= 0 && b < nbin && b % nlane == lane) count[b]++;
  }
  for (int b = lane; b < nbin; b += nlane) fail[b] = alpha * (double)count[b] + (1 - alpha) * fail[b];
  MOTION_SAMPLER_BLOCK_SYNC();
}

// Chunk k of MOTION_SAMPLER_CHUNKS covers bins [k nbin / C, (k + 1) nbin / C).
SIM_FN int motion_sampler_chunk0(int nbin, int k) { return (int)((long long)k * nbin / MOTION_SAMPLER_CHUNKS); }

// The CDF of motion_sampler_cdf's weights w_b = fail_b + uniform / nbin as a blocked prefix sum: per chunk a
// serial prefix from 0, the chunk totals' serial exclusive prefix (lane 0), each chunk's prefix plus its offset.
// cdf[nbin - 1] is the total; a chunk's last entry equals the next chunk's offset bit for bit, so the CDF never
// decreases. Then the statistics (mjlab's): st[0] the entropy -sum p log p over log(nbin) (0 for one bin),
// st[1] the largest p, st[2] its bin (the first such) over nbin. part: 4 MOTION_SAMPLER_CHUNKS doubles of scratch.
SIM_FN void motion_sampler_cdf_lanes(const double* fail, int nbin, double uniform, double* cdf, double* part,
                                     double* st, int lane, int nlane) {
  const int C = MOTION_SAMPLER_CHUNKS;
  const double floor_b = uniform / (double)nbin;
  double *off = part, *ent = part + C, *pmax = part + 2 * C, *imax = part + 3 * C;
  for (int k = lane; k < C; k += nlane) {
    double s = 0;
    for (int b = motion_sampler_chunk0(nbin, k); b < motion_sampler_chunk0(nbin, k + 1); b++) {
      s += fail[b] + floor_b;
      cdf[b] = s;
    }
    off[k] = s;
  }
  MOTION_SAMPLER_BLOCK_SYNC();
  if (lane == 0) {
    double o = 0;
    for (int k = 0; k < C; k++) {
      double t = off[k];
      off[k] = o;
      o += t;
    }
  }
  MOTION_SAMPLER_BLOCK_SYNC();
  for (int k = lane; k < C; k += nlane)
    for (int b = motion_sampler_chunk0(nbin, k); b < motion_sampler_chunk0(nbin, k + 1); b++) cdf[b] += off[k];
  MOTION_SAMPLER_BLOCK_SYNC();
  const double total = cdf[nbin - 1];
  for (int k = lane; k < C; k += nlane) {
    double h = 0, pm = -1, im = -1;
    for (int b = motion_sampler_chunk0(nbin, k); b < motion_sampler_chunk0(nbin, k + 1); b++) {
      double p = (fail[b] + floor_b) / total;
      if (p > 0) h -= p * log(p);
      if (p > pm) pm = p, im = b;
    }
    ent[k] = h, pmax[k] = pm, imax[k] = im;
  }
  MOTION_SAMPLER_BLOCK_SYNC();
  if (lane == 0) {
    double h = 0, pm = -1, im = 0;
    for (int k = 0; k < C; k++) {
      h += ent[k];
      if (pmax[k] > pm) pm = pmax[k], im = imax[k];
    }
    st[0] = nbin > 1 ? h / log((double)nbin) : 0;
    st[1] = pm;
    st[2] = im / (double)nbin;
  }
  MOTION_SAMPLER_BLOCK_SYNC();
}

#endif
