/** `spamrule rules`: placeholder until implemented. */
export async function run(_argv: string[]): Promise<number> {
  process.stderr.write('spamrule rules: not implemented yet\n');
  return 2;
}
