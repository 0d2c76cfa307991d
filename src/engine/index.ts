/** The rule engine: compiled rule sets, `classify`, scoring. (Work in progress.) */
export * from './types.js';
