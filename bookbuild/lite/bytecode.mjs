// Start the lab site's Pyodide in Node as its kernel starts, and run _in_pyodide.py's main there
// on the runtime folder (mounted at /runtime): bookbuild/lite/bytecode.py runs this.
// Usage: node bytecode.mjs RUNTIME REPORT PACKAGES_JSON IMPORTS_JSON FILES_JSON
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [runtime, report, packages, imports, files] = process.argv.slice(2);
// A bound: a runtime that never finishes starting stops the build, not hangs it.
setTimeout(() => {
  console.error("[dev] Pyodide did not start and compile within 600 s");
  process.exit(3);
}, 600_000).unref();
const { loadPyodide } = await import(pathToFileURL(`${runtime}/pyodide.mjs`).href);
const pyodide = await loadPyodide({
  indexURL: `${runtime}/`,
  packages: JSON.parse(packages),
  stdout: (line) => console.log(line),
  stderr: (line) => console.error(line),
});
pyodide.FS.mkdirTree("/runtime");
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: runtime }, "/runtime");
const source = readFileSync(new URL("./_in_pyodide.py", import.meta.url), "utf8");
pyodide.runPython(source);
const main = pyodide.globals.get("main");
writeFileSync(report, main("/runtime", JSON.parse(imports), JSON.parse(files)));
