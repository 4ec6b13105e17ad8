/*
 * The Java baseline of bench/dump.py: what ORC's `orc-tools data FILE` (FileDump -d) does for
 * each row, ported for this benchmark because orc-tools itself is not installed here.
 *
 * Same steps as org.apache.orc.tools.PrintData (ORC 2.x): OrcFile.createReader, rows() into a
 * VectorizedRowBatch from the file schema, every row rendered with gson's JsonWriter (lenient, a
 * new writer per row, a flush per row, as PrintData does) into a UTF-8 writer on System.out, and
 * FileDump's separator after the file. Compiled and run by bench/dump.py against the ORC, Hadoop
 * and gson jars shipped with pyspark. Not part of acidctl.
 */

import com.google.gson.stream.JsonWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.ql.exec.vector.BytesColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DecimalColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DoubleColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ListColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.MapColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.StructColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.TimestampColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.UnionColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.hadoop.hive.serde2.io.DateWritable;
import org.apache.orc.OrcFile;
import org.apache.orc.Reader;
import org.apache.orc.RecordReader;
import org.apache.orc.TypeDescription;

public class PrintData {
  /** FileDump.SEPARATOR: 120 underscores, printed with println after each file. */
  static final String SEPARATOR = "_".repeat(120) + "\n";

  static void value(JsonWriter w, ColumnVector v, TypeDescription t, int row) throws IOException {
    if (v.isRepeating) {
      row = 0;
    }
    if (!v.noNulls && v.isNull[row]) {
      w.nullValue();
      return;
    }
    switch (t.getCategory()) {
      case BOOLEAN:
        w.value(((LongColumnVector) v).vector[row] != 0);
        break;
      case BYTE:
      case SHORT:
      case INT:
      case LONG:
        w.value(((LongColumnVector) v).vector[row]);
        break;
      case FLOAT:
      case DOUBLE:
        w.value(((DoubleColumnVector) v).vector[row]);
        break;
      case STRING:
      case CHAR:
      case VARCHAR:
        w.value(((BytesColumnVector) v).toString(row));
        break;
      case BINARY: {
        BytesColumnVector b = (BytesColumnVector) v;
        w.beginArray();
        for (int i = 0; i < b.length[row]; ++i) {
          w.value(0xff & (int) b.vector[row][b.start[row] + i]);
        }
        w.endArray();
        break;
      }
      case DECIMAL:
        w.value(((DecimalColumnVector) v).vector[row].toString());
        break;
      case DATE:
        w.value(new DateWritable((int) ((LongColumnVector) v).vector[row]).toString());
        break;
      case TIMESTAMP:
      case TIMESTAMP_INSTANT:
        w.value(((TimestampColumnVector) v).asScratchTimestamp(row).toString());
        break;
      case LIST: {
        ListColumnVector l = (ListColumnVector) v;
        TypeDescription child = t.getChildren().get(0);
        w.beginArray();
        for (int i = 0; i < l.lengths[row]; ++i) {
          value(w, l.child, child, (int) l.offsets[row] + i);
        }
        w.endArray();
        break;
      }
      case MAP: {
        MapColumnVector m = (MapColumnVector) v;
        TypeDescription kt = t.getChildren().get(0);
        TypeDescription vt = t.getChildren().get(1);
        w.beginArray();
        for (int i = 0; i < m.lengths[row]; ++i) {
          int at = (int) m.offsets[row] + i;
          w.beginObject();
          w.name("_key");
          value(w, m.keys, kt, at);
          w.name("_value");
          value(w, m.values, vt, at);
          w.endObject();
        }
        w.endArray();
        break;
      }
      case STRUCT: {
        StructColumnVector s = (StructColumnVector) v;
        List<String> names = t.getFieldNames();
        List<TypeDescription> types = t.getChildren();
        w.beginObject();
        for (int i = 0; i < types.size(); ++i) {
          w.name(names.get(i));
          value(w, s.fields[i], types.get(i), row);
        }
        w.endObject();
        break;
      }
      case UNION: {
        UnionColumnVector u = (UnionColumnVector) v;
        int tag = u.tags[row];
        value(w, u.fields[tag], t.getChildren().get(tag), row);
        break;
      }
      default:
        throw new IllegalArgumentException("Unknown type " + t);
    }
  }

  static void row(JsonWriter w, VectorizedRowBatch batch, TypeDescription schema, int r)
      throws IOException {
    if (schema.getCategory() != TypeDescription.Category.STRUCT) {
      value(w, batch.cols[0], schema, r);
      return;
    }
    List<String> names = schema.getFieldNames();
    List<TypeDescription> types = schema.getChildren();
    w.beginObject();
    for (int c = 0; c < batch.cols.length; ++c) {
      w.name(names.get(c));
      value(w, batch.cols[c], types.get(c), r);
    }
    w.endObject();
  }

  @SuppressWarnings("deprecation")
  public static void main(String[] args) throws IOException {
    Configuration conf = new Configuration();
    PrintStream stdout = System.out;
    for (String file : args) {
      Reader reader = OrcFile.createReader(new Path(file), OrcFile.readerOptions(conf));
      OutputStreamWriter out = new OutputStreamWriter(stdout, StandardCharsets.UTF_8);
      TypeDescription schema = reader.getSchema();
      VectorizedRowBatch batch = schema.createRowBatch();
      try (RecordReader rows = reader.rows()) {
        while (rows.nextBatch(batch)) {
          for (int r = 0; r < batch.size; ++r) {
            JsonWriter w = new JsonWriter(out);
            w.setLenient(true);
            row(w, batch, schema, r);
            out.write("\n");
            out.flush();
            if (stdout.checkError()) {
              throw new IOException("Error encountered when writing to stdout.");
            }
          }
        }
      }
      stdout.println(SEPARATOR);
    }
  }
}
