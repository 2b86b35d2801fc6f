// How far a command's options travel (docs/ARCHITECTURE.md: walks), from the TypeScript checker's
// view of src/: `node scripts/walks.js` prints, for each walk, its stops, the rooms they are in,
// and how often the walk climbs back up the layers.
//
// A walk starts at one parameter of one function. Within a function, the values made from the
// walked one (the parameter, a property of it, a local set from an expression naming it) are the
// walked value; every call that hands one of them to a function of src/ is a stop, and the walk
// goes on in that function from the parameters it was handed to (one stop per call, however many
// of its arguments carry the value; a constructor's property set from it goes with the object). Stops are listed depth first, in
// the order the calls are written, each function once. A climb is a stop on a higher layer than
// the stop before it: the walk went down into a layer, came back up to a hub and went down again.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';

const require = createRequire(import.meta.url);
const ts = require('typescript');
const ROOT = new URL('..', import.meta.url).pathname;

/** The layers from the top (.dependency-cruiser.cjs); trace/ and report/ sit just below cli/, the root modules below all. */
const FLOORS = ['cli', 'trace', 'report', 'workers', 'engine', 'agents', 'channel', 'workflow', 'session', 'provider'];

/** The walks docs/ARCHITECTURE.md reports: the file, the function and the walked parameter's name. */
export const WALKS = [
  { name: "executeRun's options", file: 'src/cli/execute.ts', fn: 'executeRun', param: 'options' },
  { name: "the estimate command's options", file: 'src/cli/estimate/estimate-command.ts', fn: 'estimateCommand', param: 'options' },
  { name: "runCommand's options", file: 'src/cli/run-workflow.ts', fn: 'runCommand', param: 'options' },
];

function program(root) {
  const config = ts.readConfigFile(join(root, 'tsconfig.json'), (f) => readFileSync(f, 'utf8'));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
  return ts.createProgram(
    parsed.fileNames.filter((f) => relative(root, f).startsWith('src/')),
    parsed.options,
  );
}

function floorOf(file) {
  const [layer] = file.replace(/^src\//, '').split('/');
  const floor = FLOORS.indexOf(layer);
  return floor === -1 ? FLOORS.length : floor;
}

function roomOf(file) {
  const parts = file.replace(/^src\//, '').split('/');
  return parts.length > 2 ? `${parts[0]}/${parts[1]}/` : parts.length === 2 ? `${parts[0]}/` : '(root)';
}

/** Every node under `node`, in source order. */
function descendants(node, visit) {
  ts.forEachChild(node, (child) => {
    visit(child);
    descendants(child, visit);
  });
}

/** Walks one parameter from one function; returns the stops in order. */
export function walk(root, { file: named, fn, param }, prog = program(root)) {
  let file = named;
  const checker = prog.getTypeChecker();
  // The file named, or (in an older tree, before files moved into rooms) any file of src/ with that function.
  const sources = [prog.getSourceFile(join(root, file)), ...prog.getSourceFiles()].filter(Boolean);
  let start;
  for (const source of sources)
    descendants(source, (n) => {
      if (!start && ts.isFunctionDeclaration(n) && n.name?.text === fn) start = n;
    });
  file = relative(root, start?.getSourceFile().fileName ?? file);
  if (!start) throw new Error(`${file} has no function ${fn}`);
  const index = start.parameters.findIndex((p) => ts.isIdentifier(p.name) && p.name.text === param);
  const stops = [];
  const seen = new Set();
  const symbolOf = (node) => {
    const s = checker.getSymbolAtLocation(node);
    return s && s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
  };
  const bindingSymbols = (name, into) => {
    if (ts.isIdentifier(name)) into.add(checker.getSymbolAtLocation(name));
    else for (const element of name.elements) if (!ts.isOmittedExpression(element)) bindingSymbols(element.name, into);
  };
  /** Whether an expression is the walked value or a part of it (not something computed from it: a call's result, a closure). */
  const carries = (e, tainted) => {
    if (!e) return false;
    if (ts.isIdentifier(e)) return tainted.has(checker.getSymbolAtLocation(e));
    if (ts.isPropertyAccessExpression(e) && e.expression.kind === ts.SyntaxKind.ThisKeyword) return tainted.has(checker.getSymbolAtLocation(e.name));
    if (ts.isPropertyAccessExpression(e) || ts.isElementAccessExpression(e)) return carries(e.expression, tainted);
    if (ts.isParenthesizedExpression(e) || ts.isNonNullExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression?.(e))
      return carries(e.expression, tainted);
    if (
      ts.isBinaryExpression(e) &&
      [ts.SyntaxKind.QuestionQuestionToken, ts.SyntaxKind.BarBarToken, ts.SyntaxKind.AmpersandAmpersandToken].includes(e.operatorToken.kind)
    )
      return carries(e.left, tainted) || carries(e.right, tainted);
    if (ts.isConditionalExpression(e)) return carries(e.whenTrue, tainted) || carries(e.whenFalse, tainted);
    if (ts.isObjectLiteralExpression(e))
      return e.properties.some((p) =>
        ts.isSpreadAssignment(p)
          ? carries(p.expression, tainted)
          : ts.isPropertyAssignment(p)
            ? carries(p.initializer, tainted)
            : ts.isShorthandPropertyAssignment(p) && carries(p.name, tainted),
      );
    if (ts.isArrayLiteralExpression(e)) return e.elements.some((x) => carries(ts.isSpreadElement(x) ? x.expression : x, tainted));
    if (ts.isSpreadElement(e)) return carries(e.expression, tainted);
    return false;
  };
  /** The function a call reaches, when it is one of src/'s with a body. */
  const callee = (call) => {
    const target = ts.isNewExpression(call) ? call.expression : call.expression;
    const symbol = symbolOf(ts.isPropertyAccessExpression(target) ? target.name : target);
    for (const d of symbol?.declarations ?? []) {
      const inSrc = relative(root, d.getSourceFile().fileName).startsWith('src/');
      if (!inSrc) continue;
      if (ts.isClassDeclaration(d)) {
        const ctor = d.members.find((m) => ts.isConstructorDeclaration(m) && m.body);
        if (ctor) return { node: ctor, name: `new ${d.name?.text}` };
      }
      if ((ts.isFunctionDeclaration(d) || ts.isMethodDeclaration(d)) && d.body) return { node: d, name: d.name?.getText() };
      if (ts.isVariableDeclaration(d) && d.initializer && (ts.isArrowFunction(d.initializer) || ts.isFunctionExpression(d.initializer)))
        return { node: d.initializer, name: d.name.getText() };
      if (ts.isPropertyDeclaration(d) && d.initializer && ts.isArrowFunction(d.initializer)) return { node: d.initializer, name: d.name.getText() };
    }
    return undefined;
  };
  const visit = (fnNode, paramIndices, depth) => {
    const parameters = paramIndices.map((i) => fnNode.parameters[i]).filter(Boolean);
    if (parameters.length === 0) return;
    const tainted = new Set();
    for (const parameter of parameters) bindingSymbols(parameter.name, tainted);
    if (!fnNode.body) return;
    // A constructor's parameter kept as a property (`private readonly options`) goes with the object: `this.options` in every method.
    let kept = false;
    for (const parameter of parameters) {
      if (!(ts.isConstructorDeclaration(fnNode) && ts.isIdentifier(parameter.name) && ts.isParameterPropertyDeclaration?.(parameter, fnNode))) continue;
      kept = true;
      for (const symbol of checker.getSymbolsOfParameterPropertyDeclaration(parameter, parameter.name.text)) tainted.add(symbol);
    }
    // Locals made from the walked value join it, in the order they are written; so does a property a constructor sets from it
    // (`this.pricing = prices.pricing`), which goes with the object as a kept parameter does.
    let keptByAssignment = false;
    descendants(fnNode.body, (n) => {
      if (ts.isVariableDeclaration(n) && n.initializer && carries(n.initializer, tainted)) bindingSymbols(n.name, tainted);
      const setsProperty =
        ts.isConstructorDeclaration(fnNode) &&
        ts.isBinaryExpression(n) &&
        n.operatorToken.kind === ts.SyntaxKind.EqualsToken &&
        ts.isPropertyAccessExpression(n.left) &&
        n.left.expression.kind === ts.SyntaxKind.ThisKeyword;
      if (setsProperty && carries(n.right, tainted)) {
        tainted.add(checker.getSymbolAtLocation(n.left.name));
        keptByAssignment = true;
      }
    });
    const region = kept || keptByAssignment ? fnNode.parent : fnNode.body;
    if (region !== fnNode.body)
      descendants(region, (n) => {
        if (ts.isVariableDeclaration(n) && n.initializer && carries(n.initializer, tainted)) bindingSymbols(n.name, tainted);
      });
    // One call is one stop, however many of its arguments carry the walked value: the walk goes on from all those parameters at once.
    descendants(region, (n) => {
      if (!(ts.isCallExpression(n) || ts.isNewExpression(n))) return;
      const reached = callee(n);
      if (!reached || reached.node === fnNode) return;
      const fresh = (n.arguments ?? []).flatMap((argument, i) => {
        if (!carries(argument, tainted)) return [];
        const key = `${reached.node.pos}:${reached.node.getSourceFile().fileName}:${i}`;
        if (seen.has(key)) return [];
        seen.add(key);
        return [i];
      });
      if (fresh.length === 0) return;
      const at = relative(root, reached.node.getSourceFile().fileName);
      stops.push({ name: reached.name, file: at, room: roomOf(at), floor: floorOf(at), depth });
      visit(reached.node, fresh, depth + 1);
    });
  };
  stops.push({ name: fn, file, room: roomOf(file), floor: floorOf(file), depth: 0 });
  visit(start, [index], 1);
  return stops;
}

/** Stops, files, rooms, and climbs (a stop on a higher layer than the one before it). */
export function figures(stops) {
  const climbs = stops.slice(1).filter((s, i) => s.floor < stops[i].floor).length;
  return { stops: stops.length, files: new Set(stops.map((s) => s.file)).size, rooms: new Set(stops.map((s) => s.room)).size, climbs };
}

const START = '<!-- walks: counted by scripts/walks.js -->';
const END = '<!-- end of walks -->';

/** Each walk's figures, from one program of src/. */
export function walkFigures(root = ROOT) {
  const prog = program(root);
  return WALKS.map((w) => ({ name: w.name, ...figures(walk(root, w, prog)) }));
}

/** The page with the walks' table between its markers. */
export function withWalks(page, rows) {
  const start = page.indexOf(START);
  const end = page.indexOf(END);
  if (start === -1 || end === -1) return page;
  const table = [
    '| walk | stops | files | rooms | climbs |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.name} | ${r.stops} | ${r.files} | ${r.rooms} | ${r.climbs} |`),
  ];
  return `${page.slice(0, start + START.length)}\n${table.join('\n')}\n${page.slice(end)}`;
}

if (process.argv[1] && new URL(import.meta.url).pathname === process.argv[1]) {
  const root = process.argv[2] ?? ROOT;
  const prog = program(root);
  const rows = [];
  for (const w of WALKS) {
    const stops = walk(root, w, prog);
    rows.push({ name: w.name, ...figures(stops) });
    const f = rows.at(-1);
    console.log(`${w.name}: ${f.stops} stops in ${f.files} files and ${f.rooms} rooms, ${f.climbs} climbs`);
    if (process.env.VERBOSE) for (const s of stops) console.log(`  ${'  '.repeat(s.depth)}${s.name}  ${s.file}`);
    if (process.env.CLIMBS)
      stops.slice(1).forEach((s, i) => {
        if (s.floor < stops[i].floor) console.log(`  climb: ${stops[i].name} (${stops[i].file}) → ${s.name} (${s.file})`);
      });
  }
  if (process.argv[2] === undefined) {
    const page = join(ROOT, 'docs', 'ARCHITECTURE.md');
    const text = readFileSync(page, 'utf8');
    const next = withWalks(text, rows);
    if (next !== text) writeFileSync(page, next);
  }
}
