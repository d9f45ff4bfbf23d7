#!/usr/bin/env node
// Builds the native addon with cmake-js when a CUDA toolkit with cuBLAS is present; otherwise says so and
// exits 0, so that machines without CUDA (CI) still build the TypeScript. FERRUM_SKIP_NATIVE=1 skips too.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function findNvcc() {
  const homes = [process.env.CUDA_HOME, process.env.CUDA_PATH, '/usr/local/cuda'].filter(Boolean);
  for (const home of homes) {
    const nvcc = path.join(home, 'bin', 'nvcc');
    if (existsSync(nvcc)) return { nvcc, home };
  }
  const which = spawnSync('sh', ['-c', 'command -v nvcc'], { encoding: 'utf8' });
  const nvcc = which.stdout.trim();
  return nvcc ? { nvcc, home: path.resolve(path.dirname(nvcc), '..') } : null;
}

function hasCublas(home) {
  const dirs = [
    process.env.FERRUM_CUBLAS_ROOT && path.join(process.env.FERRUM_CUBLAS_ROOT, 'include'),
    path.join(home, 'include'),
    path.join(home, 'targets', 'x86_64-linux', 'include'),
    path.join(home, 'targets', 'sbsa-linux', 'include'),
  ].filter(Boolean);
  return dirs.some((dir) => existsSync(path.join(dir, 'cublasLt.h')));
}

function skip(reason) {
  console.log(`runtime-cuda: ${reason}, skipping native build`);
  process.exit(0);
}

if (process.env.FERRUM_SKIP_NATIVE === '1') skip('FERRUM_SKIP_NATIVE=1');
const cuda = findNvcc();
if (!cuda) skip('CUDA toolkit not found');
if (!hasCublas(cuda.home)) skip(`CUDA toolkit at ${cuda.home} has no cuBLAS headers (cublasLt.h)`);

const archs = process.env.FERRUM_CUDA_ARCHS || '80;86;89;90a';
console.log(`runtime-cuda: building with ${cuda.nvcc} for CUDA architectures ${archs}`);
const cmakeJs = path.join(packageRoot, 'node_modules', 'cmake-js', 'bin', 'cmake-js');
const result = spawnSync(
  process.execPath,
  [
    cmakeJs,
    'compile',
    '--out',
    'build',
    `--CDCMAKE_CUDA_COMPILER=${cuda.nvcc}`,
    `--CDCMAKE_CUDA_ARCHITECTURES=${archs}`,
  ],
  { cwd: packageRoot, stdio: 'inherit', env: { ...process.env, CUDA_HOME: cuda.home } },
);
process.exit(result.status ?? 1);
