/** `spamrule token`: placeholder until implemented. */
export async function run(_argv: string[]): Promise<number> {
  process.stderr.write('spamrule token: not implemented yet\n');
  return 2;
}
