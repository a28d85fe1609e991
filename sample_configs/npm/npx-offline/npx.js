#!/usr/bin/env node
// `npx [-y|--yes] <package>[@version] [args...]` for packages installed ahead of time.
//
// npm's own npx looks for <package> in the current project and the global prefix only, and
// otherwise asks the registry, even when the package sits in a node_modules/.bin on PATH. This
// stand-in, installed by `make servers` into .cache/npm-servers, first looks for <package> next
// to every node_modules/.bin directory on PATH and runs its bin in this very process (so signals,
// stdin and stdout are the server's own); anything it cannot serve goes to the real npx.
"use strict";
const fs = require("fs");
const path = require("path");
const { spawnSync } = require("child_process");
const { pathToFileURL } = require("url");

const YES_FLAGS = new Set(["-y", "--yes"]);

function parseSpec(spec) {
  const at = spec.lastIndexOf("@");
  if (at > 0) return { name: spec.slice(0, at), version: spec.slice(at + 1) };
  return { name: spec, version: "" };
}

function binOf(pkg, name) {
  if (typeof pkg.bin === "string") return pkg.bin;
  const bins = pkg.bin || {};
  const short = name.split("/").pop();
  if (bins[short]) return bins[short];
  const all = Object.values(bins);
  return all.length === 1 ? all[0] : null;
}

function findInstalled(name, version) {
  for (const dir of (process.env.PATH || "").split(path.delimiter)) {
    if (path.basename(dir) !== ".bin" || path.basename(path.dirname(dir)) !== "node_modules") continue;
    const pkgDir = path.join(path.dirname(dir), name);
    let pkg;
    try {
      pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
    } catch {
      continue;
    }
    if (version && version !== "latest" && version !== pkg.version) continue;
    const bin = binOf(pkg, name);
    if (bin) return path.join(pkgDir, bin);
  }
  return null;
}

function realNpx(argv) {
  const self = fs.realpathSync(__filename);
  for (const dir of (process.env.PATH || "").split(path.delimiter)) {
    const candidate = path.join(dir, "npx");
    try {
      if (fs.realpathSync(candidate) === self) continue;
      fs.accessSync(candidate, fs.constants.X_OK);
    } catch {
      continue;
    }
    const result = spawnSync(candidate, argv, { stdio: "inherit" });
    process.exit(result.status === null ? 1 : result.status);
  }
  process.stderr.write("npx: the real npx is not on PATH\n");
  process.exit(127);
}

function main() {
  const argv = process.argv.slice(2);
  let i = 0;
  while (i < argv.length && YES_FLAGS.has(argv[i])) i++;
  if (i >= argv.length || argv[i].startsWith("-")) return realNpx(argv);
  const { name, version } = parseSpec(argv[i]);
  const bin = findInstalled(name, version);
  if (!bin) return realNpx(argv);
  process.argv = [process.argv[0], bin, ...argv.slice(i + 1)];
  import(pathToFileURL(bin).href).catch((err) => {
    process.stderr.write(`npx: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  });
}

main();
