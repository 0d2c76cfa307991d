/**
 * spamrule's version, as package.json gives it (test/util/version.test.ts keeps the two equal; a
 * constant, because the built files sit at another depth below package.json than the sources).
 */
export const VERSION = '0.1.0';
