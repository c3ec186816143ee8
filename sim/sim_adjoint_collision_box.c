// sim_adjoint_collision_box.c: VJPs of the box pairs (plane-box, sphere-box, capsule-box, box-box), branch
// frozen. Included from sim_adjoint_collision.c (helpers and the g_bar layout are there).

// plane-box corner (witness = corner bits x 1, y 2, z 4): corner = mat2 v, dist = n.(pos2 - pos1) + n.corner,
// pos = corner + pos2 - n dist/2, n = plane z
SIM_FN void simc_adj_pair_plane_box(const sim_real* pos1, const sim_real* mat1, const sim_real* pos2,
                                    const sim_real* mat2, const sim_real* size2, int witness, sim_real dist_bar,
                                    const sim_real pos_bar[3], const sim_real frame_bar[9], sim_real g_bar[24]) {
  sim_real n[3] = {mat1[2], mat1[5], mat1[8]}, zero[3] = {0, 0, 0}, nbar[3] = {0, 0, 0}, tbar[3] = {0, 0, 0};
  sim_real v[3], corner[3], dif[3], cbar[3] = {0, 0, 0};
  v[0] = (witness & 1) ? size2[0] : -size2[0];
  v[1] = (witness & 2) ? size2[1] : -size2[1];
  v[2] = (witness & 4) ? size2[2] : -size2[2];
  simu_mulMatVec3(corner, mat2, v);
  simu_sub3(dif, pos2, pos1);
  sim_real dist = simu_dot3(dif, n) + simu_dot3(n, corner);
  simc_adj_make_frame(n, zero, frame_bar, nbar, tbar);
  // pos = corner + pos2 - n dist/2
  simc_adj_acc3(cbar, pos_bar, 1);
  simc_adj_acc3(g_bar + SIMC_ADJ_P2, pos_bar, 1);
  simc_adj_acc3(nbar, pos_bar, -dist / 2);
  sim_real db = dist_bar - simu_dot3(n, pos_bar) / 2;
  // dist = n.(pos2 - pos1) + n.corner
  simc_adj_acc3(nbar, dif, db);
  simc_adj_acc3(nbar, corner, db);
  simc_adj_acc3(g_bar + SIMC_ADJ_P2, n, db);
  simc_adj_acc3(g_bar + SIMC_ADJ_P1, n, -db);
  simc_adj_acc3(cbar, n, db);
  simc_adj_zcol(g_bar + SIMC_ADJ_M1, nbar);
  // corner = mat2 v (v constant)
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++) g_bar[SIMC_ADJ_M2 + 3 * r + c] += cbar[r] * v[c];
}

// not differentiated yet (step 2): zero cotangents
SIM_FN void simc_adj_pair_sphere_box(const sim_real* pos1, sim_real r1, const sim_real* pos2, const sim_real* mat2,
                                     const sim_real* size2, int witness, sim_real dist_bar,
                                     const sim_real pos_bar[3], const sim_real frame_bar[9], sim_real g_bar[24]) {
  (void)pos1, (void)r1, (void)pos2, (void)mat2, (void)size2, (void)witness, (void)dist_bar, (void)pos_bar;
  (void)frame_bar, (void)g_bar;
}
SIM_FN void simc_adj_pair_capsule_box(sim_real margin, const sim_real* pos1, const sim_real* mat1,
                                      const sim_real* size1, const sim_real* pos2, const sim_real* mat2,
                                      const sim_real* size2, int witness, sim_real dist_bar,
                                      const sim_real pos_bar[3], const sim_real frame_bar[9], sim_real g_bar[24]) {
  (void)margin, (void)pos1, (void)mat1, (void)size1, (void)pos2, (void)mat2, (void)size2, (void)witness;
  (void)dist_bar, (void)pos_bar, (void)frame_bar, (void)g_bar;
}
SIM_FN void simc_adj_pair_box_box(sim_real margin, const sim_real* pos1, const sim_real* mat1,
                                  const sim_real* size1, const sim_real* pos2, const sim_real* mat2,
                                  const sim_real* size2, int witness, sim_real dist_bar, const sim_real pos_bar[3],
                                  const sim_real frame_bar[9], sim_real g_bar[24]) {
  (void)margin, (void)pos1, (void)mat1, (void)size1, (void)pos2, (void)mat2, (void)size2, (void)witness;
  (void)dist_bar, (void)pos_bar, (void)frame_bar, (void)g_bar;
}
