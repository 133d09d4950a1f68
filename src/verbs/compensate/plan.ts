/** The compensate plan is pure and lives in core/; this is its place in the verb. */
export * from '../../core/compensate-plan.js';
