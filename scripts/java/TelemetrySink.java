// A broker-side KIP-714 telemetry receiver for the tests: Apache Kafka hands it every
// PushTelemetry payload a client sends; it decodes the OpenTelemetry MetricsData and appends
// one line per data point to the file named by the broker setting `telemetry.sink.file`:
//
//   <client instance id (standard UUID form)> <client id> <metric name> <value> [attribute=value ...]
//
// Configure the broker with `metric.reporters=TelemetrySink` and this class on its classpath
// (`scripts/kafka telemetry-sink`, then `scripts/kafka start --classpath DIR`).

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;
import org.apache.kafka.shaded.io.opentelemetry.proto.common.v1.KeyValue;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.Metric;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.MetricsData;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.NumberDataPoint;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ResourceMetrics;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ScopeMetrics;

@SuppressWarnings("deprecation")
public class TelemetrySink implements MetricsReporter, ClientTelemetry {
    private volatile Path file = Paths.get("telemetry.log");

    @Override
    public void configure(Map<String, ?> configs) {
        Object f = configs.get("telemetry.sink.file");
        if (f != null) {
            file = Paths.get(f.toString());
        }
    }

    @Override
    public void init(List<KafkaMetric> metrics) {}

    @Override
    public void metricChange(KafkaMetric metric) {}

    @Override
    public void metricRemoval(KafkaMetric metric) {}

    @Override
    public void close() {}

    @Override
    public ClientTelemetryReceiver clientReceiver() {
        return (context, payload) -> {
            StringBuilder out = new StringBuilder();
            // Kafka's Uuid prints as base64; the standard form is what other clients print.
            org.apache.kafka.common.Uuid id = payload.clientInstanceId();
            String uuid = new java.util.UUID(id.getMostSignificantBits(), id.getLeastSignificantBits()).toString();
            String prefix = uuid + " " + context.clientId() + " ";
            try {
                ByteBuffer data = payload.data().duplicate();
                MetricsData md = MetricsData.parseFrom(data);
                for (ResourceMetrics rm : md.getResourceMetricsList()) {
                    for (ScopeMetrics sm : rm.getScopeMetricsList()) {
                        for (Metric m : sm.getMetricsList()) {
                            List<NumberDataPoint> points = m.hasSum()
                                ? m.getSum().getDataPointsList()
                                : m.getGauge().getDataPointsList();
                            for (NumberDataPoint p : points) {
                                out.append(prefix).append(m.getName()).append(' ')
                                    .append(p.hasAsInt() ? (double) p.getAsInt() : p.getAsDouble());
                                for (KeyValue kv : p.getAttributesList()) {
                                    out.append(' ').append(kv.getKey()).append('=')
                                        .append(kv.getValue().getStringValue());
                                }
                                out.append('\n');
                            }
                        }
                    }
                }
            } catch (Exception e) {
                out.append(prefix).append("UNDECODABLE ").append(e).append('\n');
            }
            synchronized (this) {
                try {
                    Files.write(file, out.toString().getBytes(StandardCharsets.UTF_8),
                        StandardOpenOption.CREATE, StandardOpenOption.APPEND);
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            }
        };
    }
}
