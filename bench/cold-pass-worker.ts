/**
 * One cold pass in a fresh worker thread (see `coldPassInThread` in model-cost.ts): loads the corpus and
 * the public rule set, opens the model as a second process would (preloaded and warmed up), classifies
 * the training half first when `primed`, runs `coldPass` in the order it is given over the held-out half
 * and posts its times.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openClassifier, sqliteModelConfig } from '../src/classifier/index.js';
import { classifyBothSides, coldPass, splitHalves, type ColdOrder } from './model-cost.js';
import { analysisEngine, loadCorpus, publicBundle } from './common.js';

const { modelFile, trustedDomains, order, primed } = workerData as { modelFile: string; trustedDomains: string[]; order: ColdOrder; primed: boolean };
const { train, test } = splitHalves(loadCorpus());
const classifier = await openClassifier(sqliteModelConfig(modelFile), { trustedDomains, refreshMs: 0, preload: true });
try {
  await classifier.reload();
  if (classifier.generation === 0) throw new Error(`no model in ${modelFile}`);
  const engine = analysisEngine(publicBundle());
  if (primed) await classifyBothSides(engine, classifier, train);
  parentPort!.postMessage(await coldPass(engine, classifier, test, undefined, order));
} finally {
  await classifier.store.store.close();
}
