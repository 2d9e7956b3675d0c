package io.workqueue.examples.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.io.IOException;
import java.text.DecimalFormat;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.CategoryAxis;
import org.jfree.chart.axis.CategoryLabelPositions;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.plot.CategoryPlot;
import org.jfree.chart.plot.ValueMarker;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.category.BarRenderer;
import org.jfree.chart.renderer.category.StandardBarPainter;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.ui.RectangleAnchor;
import org.jfree.chart.ui.TextAnchor;
import org.jfree.data.category.DefaultCategoryDataset;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/** PNG charts of the results (JFreeChart, headless). */
final class Charts {
    private static final Color[] PALETTE = {
        new Color(0x4C78A8), new Color(0xF58518), new Color(0x54A24B), new Color(0xB279A2),
        new Color(0xE45756), new Color(0x72B7B2), new Color(0x9D755D)
    };

    private Charts() {}

    /** A grouped bar chart; {@code values} maps series to category to value. */
    static void bars(Path file, String title, String valueLabel, Map<String, Map<String, Double>> values,
            boolean log, List<Marker> markers, int width, int height) throws IOException {
        DefaultCategoryDataset dataset = new DefaultCategoryDataset();
        values.forEach((series, byCategory) -> byCategory.forEach((category, value) -> {
            if (value != null && !value.isNaN()) {
                dataset.addValue(value, series, category);
            }
        }));
        CategoryAxis categories = new CategoryAxis();
        categories.setCategoryLabelPositions(CategoryLabelPositions.STANDARD);
        categories.setMaximumCategoryLabelLines(2);
        BarRenderer renderer = new BarRenderer();
        renderer.setBarPainter(new StandardBarPainter());
        renderer.setShadowVisible(false);
        renderer.setItemMargin(0.04);
        for (int i = 0; i < PALETTE.length; i++) {
            renderer.setSeriesPaint(i, PALETTE[i]);
        }
        CategoryPlot plot;
        if (log) {
            LogAxis axis = logAxis(valueLabel);
            axis.setSmallestValue(minPositive(values) / 2);
            renderer.setBase(minPositive(values) / 2);
            plot = new CategoryPlot(dataset, categories, axis, renderer);
        } else {
            plot = new CategoryPlot(dataset, categories, new NumberAxis(valueLabel), renderer);
        }
        style(plot);
        markers.forEach(marker -> plot.addRangeMarker(dashedLine(marker)));
        save(file, new JFreeChart(title, new Font("SansSerif", Font.BOLD, 16), plot, true), width, height);
    }

    /** A line chart; {@code series} maps a name to its points (x, y). */
    static void lines(Path file, String title, String xLabel, String yLabel, Map<String, List<double[]>> series,
            boolean logX, boolean logY, List<Marker> markers, int width, int height) throws IOException {
        XYSeriesCollection dataset = new XYSeriesCollection();
        series.forEach((name, points) -> {
            XYSeries s = new XYSeries(name);
            for (double[] p : points) {
                s.add(p[0], p[1]);
            }
            dataset.addSeries(s);
        });
        XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
        for (int i = 0; i < PALETTE.length; i++) {
            renderer.setSeriesPaint(i, PALETTE[i]);
            renderer.setSeriesStroke(i, new BasicStroke(2f));
        }
        XYPlot plot = new XYPlot(dataset, logX ? logAxis(xLabel) : new NumberAxis(xLabel),
                logY ? logAxis(yLabel) : new NumberAxis(yLabel), renderer);
        plot.setBackgroundPaint(Color.WHITE);
        plot.setRangeGridlinePaint(new Color(0xDDDDDD));
        plot.setDomainGridlinePaint(new Color(0xDDDDDD));
        markers.forEach(marker -> plot.addRangeMarker(dashedLine(marker)));
        save(file, new JFreeChart(title, new Font("SansSerif", Font.BOLD, 16), plot, true), width, height);
    }

    record Marker(double value, String label, Color color) {}

    /** A marker as a labelled, dashed horizontal line across the plot. */
    private static ValueMarker dashedLine(Marker marker) {
        ValueMarker line = new ValueMarker(marker.value(), marker.color(), new BasicStroke(2f,
                BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
        line.setLabel(marker.label());
        line.setLabelFont(new Font("SansSerif", Font.PLAIN, 12));
        line.setLabelAnchor(RectangleAnchor.TOP_LEFT);
        line.setLabelTextAnchor(TextAnchor.BOTTOM_LEFT);
        return line;
    }

    /** A base-10 log axis with a tick at each power of ten, labelled as plain numbers. */
    private static LogAxis logAxis(String label) {
        LogAxis axis = new LogAxis(label);
        axis.setBase(10);
        axis.setTickUnit(new NumberTickUnit(1.0));
        axis.setMinorTickMarksVisible(true);
        axis.setMinorTickCount(9);
        axis.setNumberFormatOverride(new DecimalFormat("#,##0.###"));
        return axis;
    }

    private static void style(CategoryPlot plot) {
        plot.setBackgroundPaint(Color.WHITE);
        plot.setRangeGridlinePaint(new Color(0xDDDDDD));
    }

    private static double minPositive(Map<String, Map<String, Double>> values) {
        return values.values().stream().flatMap(m -> m.values().stream())
                .filter(v -> v != null && v > 0).mapToDouble(Double::doubleValue).min().orElse(1);
    }

    private static void save(Path file, JFreeChart chart, int width, int height) throws IOException {
        chart.setBackgroundPaint(Color.WHITE);
        ChartUtils.saveChartAsPNG(file.toFile(), chart, width, height);
    }
}
