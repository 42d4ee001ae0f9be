import { fileURLToPath } from "node:url";
import ts from "typescript";
import { expect, test } from "vitest";

// Under exactOptionalPropertyTypes (which `tsc --init` turns on), an optional
// property `token?: string` refuses `token: process.env.FENCELEASE_TOKEN`,
// whose type is `string | undefined`. Every property that a caller of the
// package may leave out must also take undefined: `token?: string | undefined`.
// This walks what each public entry's functions, constructors and methods take,
// through nested objects and arrays, and lists every optional property that
// refuses undefined.

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const ENTRIES = ["src/index.ts", "src/node.ts", "src/client/index.ts", "src/worker.ts"].map((entry) => `${ROOT}${entry}`);

function program(): ts.Program {
  const config = ts.getParsedCommandLineOfConfigFile(`${ROOT}tsconfig.json`, { exactOptionalPropertyTypes: true }, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })!;
  return ts.createProgram(ENTRIES, config.options);
}

/** The optional properties, as `Owner.path`, that what the entries' exports take leaves closed to undefined. */
function optionalsRefusingUndefined(): string[] {
  const built = program();
  const checker = built.getTypeChecker();
  const undefinedType = checker.getUndefinedType();
  const found = new Set<string>();
  const inputs = new Set<ts.Type>();
  const offered = new Set<ts.Type>();
  // A type of the platform or of another package (AbortSignal, Date, a Request), but not Partial<T> or Omit<T, K> of ours.
  const fromLibrary = (type: ts.Type) =>
    !((type as ts.ObjectType).objectFlags & ts.ObjectFlags.Mapped) &&
    (type.getSymbol()?.declarations?.some((declaration) => {
      const file = declaration.getSourceFile();
      return built.isSourceFileDefaultLibrary(file) || (file.fileName.includes("/node_modules/") && !file.fileName.includes("/node_modules/zod/"));
    }) ?? false);
  const takesUndefined = (type: ts.Type) =>
    (type.isUnion() ? type.types : [type]).some((member) => member === undefinedType || (member.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) !== 0);

  /** What a caller passes: its optional properties must take undefined, and so must those of what they hold. */
  function input(type: ts.Type, where: string) {
    if (inputs.has(type) || fromLibrary(type) || type.getCallSignatures().length > 0) return;
    inputs.add(type);
    if (type.isUnionOrIntersection()) return type.types.forEach((member) => input(member, where));
    if (!(type.flags & ts.TypeFlags.Object) || (type.getSymbol()?.flags ?? 0) & ts.SymbolFlags.Class) return;
    if (checker.isArrayType(type) || checker.isTupleType(type)) return checker.getTypeArguments(type as ts.TypeReference).forEach((element) => input(element, `${where}[]`));
    const name = checker.typeToString(type).length <= 40 ? checker.typeToString(type) : where;
    for (const property of checker.getPropertiesOfType(type)) {
      const declared = property.valueDeclaration && ts.isPropertySignature(property.valueDeclaration) && property.valueDeclaration.type;
      const propertyType = declared ? checker.getTypeFromTypeNode(declared) : checker.getTypeOfSymbol(property);
      if (property.flags & ts.SymbolFlags.Optional && !takesUndefined(propertyType)) found.add(`${name}.${property.name}`);
      input(propertyType, `${name}.${property.name}`);
    }
  }

  /** What the package offers: every parameter of its functions and methods, through the objects it hands out. */
  function api(type: ts.Type, where: string) {
    if (offered.has(type) || fromLibrary(type)) return;
    offered.add(type);
    for (const signature of [...type.getCallSignatures(), ...type.getConstructSignatures()]) {
      for (const parameter of signature.getParameters()) input(checker.getTypeOfSymbol(parameter), `${where}(${parameter.name})`);
      api(signature.getReturnType(), `${where}()`);
    }
    const awaited = checker.getAwaitedType(type);
    if (awaited && awaited !== type) return api(awaited, where);
    if (type.flags & ts.TypeFlags.Object && !checker.isArrayType(type)) {
      for (const property of checker.getPropertiesOfType(type)) {
        if (!property.name.startsWith("#")) api(checker.getTypeOfSymbol(property), `${where}.${property.name}`);
      }
    }
  }

  for (const entry of ENTRIES) {
    const module = checker.getSymbolAtLocation(built.getSourceFile(entry)!)!;
    for (const exported of checker.getExportsOfModule(module)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      if (symbol.flags & ts.SymbolFlags.Value) api(checker.getTypeOfSymbol(symbol), exported.name);
      if (symbol.flags & ts.SymbolFlags.Class) api(checker.getDeclaredTypeOfSymbol(symbol), exported.name);
    }
  }
  return [...found].sort();
}

test("every optional property that the package's functions, constructors and methods take also takes undefined (exactOptionalPropertyTypes)", () => {
  expect(optionalsRefusingUndefined()).toEqual([]);
}, 60_000);
