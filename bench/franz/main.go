// franz-bench: a fixed-count harness over franz-go's kgo client, for kafka-bench (franz-go's
// own bench program has no record count). One run, one JSON line on stdout:
//
//	franz-bench produce BROKERS TOPIC COUNT SIZE ACKS COMPRESSION
//	franz-bench consume BROKERS TOPIC COUNT
//
// The producer sends COUNT records of SIZE bytes with kgo's asynchronous Produce (a callback
// that counts failures), then Flush; linger 5 ms and batches up to 1 MB as the other clients
// get, idempotence only with acks=all (kgo requires it then); ACKS and COMPRESSION both
// "default" leave kgo's own defaults (out of the box). The consumer reads COUNT records
// from the start of partitions 0-2.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// versions caps ApiVersions at v3: Tansu 0.6 closes the connection on kgo's v4 request (kgo
// then fails every record: "broker closed the connection immediately during api versions
// negotiation"); every other request keeps kgo's newest stable version.
func versions() kgo.Opt {
	v := kversion.Stable()
	v.SetMaxKeyVersion(18, 3)
	return kgo.MaxVersions(v)
}

func die(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "franz-bench: "+format+"\n", a...)
	os.Exit(1)
}

func main() {
	if len(os.Args) < 5 {
		die("usage: franz-bench produce|consume BROKERS TOPIC COUNT [SIZE ACKS COMPRESSION]")
	}
	role, brokers, topic := os.Args[1], os.Args[2], os.Args[3]
	count, err := strconv.Atoi(os.Args[4])
	if err != nil {
		die("count: %v", err)
	}
	var records int
	var secs float64
	switch role {
	case "produce":
		if len(os.Args) != 8 {
			die("produce takes BROKERS TOPIC COUNT SIZE ACKS COMPRESSION")
		}
		size, err := strconv.Atoi(os.Args[5])
		if err != nil {
			die("size: %v", err)
		}
		records, secs = produce(brokers, topic, count, size, os.Args[6], os.Args[7])
	case "consume":
		records, secs = consume(brokers, topic, count)
	default:
		die("unknown role %q", role)
	}
	out, _ := json.Marshal(map[string]any{"records": records, "secs": secs})
	fmt.Println(string(out))
}

func produce(brokers, topic string, count, size int, acks, compression string) (int, float64) {
	opts := []kgo.Opt{kgo.SeedBrokers(brokers), versions()}
	// "default" (acks and compression both): out of the box, kgo's own defaults.
	if acks != "default" {
		opts = append(opts,
			kgo.ProducerLinger(5*time.Millisecond),
			kgo.ProducerBatchMaxBytes(1000000),
			kgo.MaxBufferedRecords(1000000),
		)
		if acks == "all" {
			opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
		} else {
			opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
		}
		if compression == "lz4" {
			opts = append(opts, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
		} else {
			opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
		}
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		die("client: %v", err)
	}
	defer cl.Close()
	value := make([]byte, size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	var failed atomic.Int64
	var firstErr atomic.Value
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
			firstErr.CompareAndSwap(nil, err.Error())
		}
	}
	ctx := context.Background()
	start := time.Now()
	for i := 0; i < count; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, done)
	}
	if err := cl.Flush(ctx); err != nil {
		die("flush: %v", err)
	}
	secs := time.Since(start).Seconds()
	if n := failed.Load(); n > 0 {
		die("%d records failed; the first: %v", n, firstErr.Load())
	}
	return count, secs
}

func consume(brokers, topic string, count int) (int, float64) {
	start := kgo.NewOffset().AtStart()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers),
		versions(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			topic: {0: start, 1: start, 2: start},
		}),
	)
	if err != nil {
		die("client: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	begin := time.Now()
	n := 0
	for n < count {
		fetches := cl.PollFetches(ctx)
		if errs := fetches.Errors(); len(errs) > 0 {
			die("fetch: %v", errs[0].Err)
		}
		n += fetches.NumRecords()
	}
	return n, time.Since(begin).Seconds()
}
