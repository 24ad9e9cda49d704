import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'trainer-bridge/**', 'runs/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', URL: 'readonly', AbortController: 'readonly', fetch: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // src/core is the editor-free library; the CLI, the trainer side and tests import it.
    files: ['src/core/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [{ name: 'vscode', message: 'src/core must not depend on vscode; put editor glue in src/extension.' }] }] },
  },
  {
    // Webview apps are bundled for the browser (webview/tsconfig.json has the DOM library). They
    // may import types from src/core (erased from the bundle), never its values, nor the extension
    // host, nor Node: what both sides run is in webview/shared or the app's own DOM-free modules.
    files: ['webview/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        paths: [{ name: 'vscode', message: 'Webview code runs in the browser: talk to the extension through webview/shared/ipc.ts.' }],
        patterns: [
          { regex: '(^|/)src/core(/|$)', allowTypeImports: true, message: 'Webview code imports only types from src/core (import type …); a value would bundle host code into the page. Move what both sides run to webview/shared or the app folder.' },
          { regex: '(^|/)src/(extension|cli)(/|$)', message: 'Webview code must not import the extension host or the CLI; declare shared data in src/core (types) or webview/shared.' },
          { regex: '^node:', message: 'Webview code runs in the browser: no Node modules.' },
        ],
      }],
      'no-restricted-globals': ['error', ...['process', 'Buffer', 'require', '__dirname', '__filename'].map((name) => ({ name, message: 'Webview code runs in the browser: no Node globals.' }))],
    },
  },
);
