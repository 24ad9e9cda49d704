// Files the bundles read at run time, relative to their own folder: they must travel next to the
// bundle (dist/), since esbuild inlines the code that reads them but not the files. dockerode's
// BuildKit path (`version: '2'` builds, session auth) loads its .proto files from `__dirname/proto`,
// which in a bundle is dist/.
export const RUNTIME_ASSETS = [
  { from: 'src/core/prompts', to: 'dist/prompts' },
  { from: 'node_modules/dockerode/lib/proto', to: 'dist/proto' },
];
