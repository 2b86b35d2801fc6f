// `npm run lint`: no promise in src/ is let go with `void` (docs/ARCHITECTURE.md: one guarded way in).
// A promise nobody awaits goes to a named owner instead: the run's step (engine/run.ts) or
// `detached` (src/detached.ts), which says what becomes of its failure. Biome's noFloatingPromises
// finds the promise left as a statement; this finds the one `void` hides, with the type checker.
import ts from 'typescript';

const config = ts.getParsedCommandLineOfConfigFile('tsconfig.json', {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
const program = ts.createProgram(config.fileNames, config.options);
const checker = program.getTypeChecker();

const thenable = (type) => (type.isUnion() ? type.types.some(thenable) : type.getProperty('then') !== undefined);

const found = [];
for (const file of program.getSourceFiles()) {
  // detached() itself is where a promise is let go, with its failure handled.
  if (file.isDeclarationFile || !file.fileName.includes('/src/') || file.fileName.endsWith('/src/detached.ts')) continue;
  const visit = (node) => {
    if (ts.isVoidExpression(node) && thenable(checker.getTypeAtLocation(node.expression))) {
      const { line } = file.getLineAndCharacterOfPosition(node.getStart());
      found.push(`${file.fileName.slice(file.fileName.indexOf('src/'))}:${line + 1}: void ${node.expression.getText().slice(0, 60)}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
}
if (found.length) {
  process.stderr.write(
    `${found.join('\n')}\n${found.length} promise${found.length === 1 ? '' : 's'} let go with void in src/: await it, or hand it to detached()\n`,
  );
  process.exitCode = 1;
}
