// `adjoint bench nn`: times the MLP train step (forward, backward, Adam) and forward alone on the GPU for the
// SHAC actor and critic; bench/nn_torch.py times the same in PyTorch. See bench/RESULTS.md.
#ifndef NN_BENCH_H
#define NN_BENCH_H
#ifdef __cplusplus
extern "C" {
#endif

// main's convention: argv[0] names the command (`adjoint bench nn` passes "nn"), then options:
//   [--all] [--batch N]... [--net actor|critic] [--tf32 0|1] [--iters N] [--json PATH] [--no-splitk]
//   [--tune] (NN_CUDA_TUNE models; JSON "mode":"tuned") [--tune-load PATH] [--tune-save PATH] (tune table file)
//   [--fuse-out] (NN_CUDA_FUSE_OUT models; JSON "mode":"fuse_out" or "tuned+fuse_out")
//   [--variants] (ablation of kernel choices, the tuned and fused modes included) [--profile] (per-GEMM timings)
// Every timing row also has the GEMM-only times of the same plans (gemm_*_graph_ms).
// Returns 0 on success, 2 when built without CUDA, another nonzero code on failure.
int nn_bench_main(int argc, char** argv);

#ifdef __cplusplus
}
#endif
#endif
