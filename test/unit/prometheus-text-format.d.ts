// Types for parse-prometheus-text-format (the package ships none): prom2json-compatible output.
declare module 'parse-prometheus-text-format' {
  export interface PrometheusSample {
    value: string;
    labels?: Record<string, string>;
    timestamp_ms?: string;
  }
  export interface PrometheusFamily {
    name: string;
    help: string;
    type: 'GAUGE' | 'COUNTER' | 'SUMMARY' | 'HISTOGRAM' | 'UNTYPED';
    metrics: PrometheusSample[];
  }
  export default function parsePrometheusTextFormat(text: string): PrometheusFamily[];
}
