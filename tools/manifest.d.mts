// Types of tools/manifest.mjs (plain JavaScript, run by node at packaging time), for the tests that use it.
export declare const MANIFEST_FILE: 'MANIFEST.json';
export declare const MANIFEST_FORMAT: 'linekeeper.package-manifest';

export interface PackageManifest {
  format: typeof MANIFEST_FORMAT;
  name: string;
  version: string;
  /** `/`-separated path relative to the application folder → SHA-256 (hex) and mode (four octal digits). */
  files: Record<string, { sha256: string; mode: string }>;
}

export declare function listFiles(dir: string): string[];
export declare function buildManifest(dir: string, meta: { name: string; version: string }): PackageManifest;
export declare function writeManifest(dir: string, meta: { name: string; version: string }): { manifest: PackageManifest; sha256: string };
